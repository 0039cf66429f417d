{{/*
The name of every object: fullnameOverride; else the release name when it says the chart's name
(or nameOverride); else <release>-<name>. As `helm create` writes it, Kueue's and Kyverno's too.
*/}}
{{- define "jobgate.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* priorityClassQuota.pods, or 2 x replicas + 4: see values.yaml. */}}
{{- define "jobgate.quotaPods" -}}
{{- if kindIs "invalid" .Values.priorityClassQuota.pods -}}
{{- add (mul 2 (int .Values.replicas)) 4 -}}
{{- else -}}
{{- if lt (int .Values.priorityClassQuota.pods) (add (int .Values.replicas) 1) -}}
{{- fail (printf "priorityClassQuota.pods=%v is less than replicas + 1 (%d): a rolling update could not start its surge pod" .Values.priorityClassQuota.pods (add (int .Values.replicas) 1)) -}}
{{- end -}}
{{- .Values.priorityClassQuota.pods -}}
{{- end -}}
{{- end -}}

{{/* Labels on every object: deploy/base's, plus Helm's. */}}
{{- define "jobgate.labels" -}}
app.kubernetes.io/name: jobgate
app.kubernetes.io/part-of: jobgate
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Labels on the audit's objects (audit.enabled), as deploy/audit/cronjob's. */}}
{{- define "jobgate.auditLabels" -}}
{{ include "jobgate.labels" . }}
app.kubernetes.io/component: audit
{{- end -}}

{{/* The webhook pods: what the Deployment, Service, PDB and PodMonitor select. */}}
{{- define "jobgate.selectorLabels" -}}
app.kubernetes.io/component: webhook
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/name: jobgate
{{- end -}}

{{- define "jobgate.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding tls.crt and tls.key. */}}
{{- define "jobgate.tlsSecret" -}}
{{- if eq .Values.certificates.source "secret" -}}
{{- required "certificates.secret.name is required with certificates.source=secret" .Values.certificates.secret.name -}}
{{- else -}}
{{- printf "%s-tls" (include "jobgate.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* The policies' names, in jobgate's order. */}}
{{- define "jobgate.policyNames" -}}
recovery-annotation-value recovery-annotation-on-job recovery-needs-failed recovery-counts-toward-backoff indexed-terminating-or-failed
{{- end -}}

{{/* JOBGATE_POLICY: rollout.warnOnly sets every policy to warn; else the set ones. */}}
{{- define "jobgate.policySetting" -}}
{{- $settings := list -}}
{{- range $name := splitList " " (include "jobgate.policyNames" .) -}}
{{- if $.Values.rollout.warnOnly -}}
{{- $settings = append $settings (printf "%s=warn" $name) -}}
{{- else if hasKey $.Values.policies $name -}}
{{- $settings = append $settings (printf "%s=%s" $name (get $.Values.policies $name)) -}}
{{- end -}}
{{- end -}}
{{- join "," $settings -}}
{{- end -}}

{{/* "true" when every policy is off: no validating webhook is installed. */}}
{{- define "jobgate.allPoliciesOff" -}}
{{- $off := not .Values.rollout.warnOnly -}}
{{- range $name := splitList " " (include "jobgate.policyNames" .) -}}
{{- if ne (get $.Values.policies $name) "off" -}}
{{- $off = false -}}
{{- end -}}
{{- end -}}
{{- if $off }}true{{ end -}}
{{- end -}}

{{/* The keys /mutate sets and the reconciler reads, as JSON: recoveryAnnotationKeys, else Kueue's
key when recoveredBy is kueue, else none (the binaries' defaults). */}}
{{- define "jobgate.recoveryAnnotationKeys" -}}
{{- if and (eq .Values.recoveredBy "kueue") (not .Values.reconciler.kueueRecovers) }}
{{- fail "recoveredBy: kueue needs reconciler.kueueRecovers: true, or jobgate's reconciler recovers the same pods as Kueue" }}
{{- end }}
{{- if .Values.recoveryAnnotationKeys }}{{ toJson .Values.recoveryAnnotationKeys }}
{{- else if eq .Values.recoveredBy "kueue" }}["kueue.x-k8s.io/safe-to-forcefully-delete"]
{{- else }}[]
{{- end }}
{{- end -}}

{{/* Recovery annotation keys jobgate recognizes: the configured ones, then both of Kueue's. */}}
{{- define "jobgate.recognizedKeys" -}}
{{- $keys := concat .Values.recoveryAnnotationKeys (list "kueue.x-k8s.io/safe-to-forcefully-terminate" "kueue.x-k8s.io/safe-to-forcefully-delete") | uniq -}}
{{- $quoted := list -}}
{{- range $keys }}{{ $quoted = append $quoted (printf "'%s'" .) }}{{ end -}}
[{{ join ", " $quoted }}]
{{- end -}}

{{/* namespaceSelector of every webhook: never kube-system, the release namespace, or the extra ones. */}}
{{- define "jobgate.excludedNamespaces" -}}
- key: kubernetes.io/metadata.name
  operator: NotIn
  values: {{ concat (list "kube-system" .Release.Namespace) .Values.webhook.excludedNamespaces | toJson }}
{{- end -}}

{{/* caBundle for the generated and secret sources (cert-manager injects its own). */}}
{{- define "jobgate.caBundle" -}}
{{- if eq .Values.certificates.source "secret" -}}
caBundle: {{ required "certificates.secret.caBundle is required with certificates.source=secret" .Values.certificates.secret.caBundle }}
{{- else if eq .Values.certificates.source "generated" -}}
caBundle: {{ index (include "jobgate.generatedCertificates" . | fromYaml) "ca.crt" }}
{{- end -}}
{{- end -}}

{{/*
The generated CA and serving certificate, base64: the Secret's data. An existing Secret is kept
(upgrades do not rotate the CA under running pods); `helm template` has none and generates.
Cached so the Secret and every caBundle use the same pair.
*/}}
{{- define "jobgate.generatedCertificates" -}}
{{- $name := printf "%s-tls" (include "jobgate.fullname" .) -}}
{{- $existing := lookup "v1" "Secret" .Release.Namespace $name -}}
{{- if and $existing (index $existing "data") -}}
{{- $existing.data | toYaml -}}
{{- else -}}
{{- if not (hasKey .Values "_jobgateGenerated") -}}
{{- $service := include "jobgate.fullname" . -}}
{{- $ns := .Release.Namespace -}}
{{- $names := list $service (printf "%s.%s" $service $ns) (printf "%s.%s.svc" $service $ns) (printf "%s.%s.svc.cluster.local" $service $ns) -}}
{{- $ca := genCA (printf "jobgate CA for %s.%s.svc" $service $ns) (int .Values.certificates.generatedValidityDays) -}}
{{- $cert := genSignedCert (printf "%s.%s.svc" $service $ns) nil $names (int .Values.certificates.generatedValidityDays) $ca -}}
{{- $_ := set .Values "_jobgateGenerated" (dict "tls.crt" ($cert.Cert | b64enc) "tls.key" ($cert.Key | b64enc) "ca.crt" ($ca.Cert | b64enc)) -}}
{{- end -}}
{{- .Values._jobgateGenerated | toYaml -}}
{{- end -}}
{{- end -}}

{{/*
The cluster's minor release as a number: kubernetes.version when set, else the cluster's own
(.Capabilities.KubeVersion; managed clusters print minors such as "33+").
*/}}
{{- define "jobgate.kubernetesMinor" -}}
{{- if .Values.kubernetes.version -}}
{{- index (splitList "." (trimPrefix "v" .Values.kubernetes.version)) 1 | int -}}
{{- else -}}
{{- .Capabilities.KubeVersion.Minor | trimSuffix "+" | int -}}
{{- end -}}
{{- end -}}
