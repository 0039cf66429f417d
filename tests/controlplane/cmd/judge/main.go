// Command judge runs kube-apiserver's own create and update path for Jobs and CronJobs over JSON
// lines, without the rest of an apiserver: the parity harness of jobgate's tests. For each
// request it decodes the body with the strict serializer and the defaulting codec the apiserver's
// handlers use (k8s.io/apiserver pkg/endpoints/handlers/create.go, update.go: StrictSerializer,
// DecoderToVersion to the hub version), fills the system fields, and runs rest.BeforeCreate or
// rest.BeforeUpdate with the batch strategies (pkg/registry/batch/job, .../cronjob): the same
// PrepareFor*, Validate* (hand-written and declarative) and Warnings* the apiserver runs, built
// from the same k8s.io/kubernetes module version. What it cannot see: admission plugins and
// webhooks, storage (resourceVersion conflicts), authorization.
//
// Input, one JSON object a line:
//
//	{"id": "...", "operation": "CREATE"|"UPDATE", "object": {...}, "oldObject": {...},
//	 "mergePatch": {...}}
//
// For UPDATE, oldObject is first created (as it would have been stored), then its status is
// put back as the Job controller would have written it through /status; the new object is
// `object`, or the stored oldObject with the JSON merge patch `mergePatch` applied (RFC 7386, what
// `kubectl patch --type=merge` sends), and takes the stored resourceVersion when it has none
// (what `kubectl apply` sends). Output, one line each:
//
//	{"id", "allowed", "code", "reason", "message", "causes": [{"type", "field", "message"}],
//	 "warnings": [...], "object": {...}, "oldObject": {...}}
//
// object is the new object after the strategy's PrepareFor* (the object a validating webhook is
// sent, and what is stored when allowed); oldObject is the stored old object of an UPDATE.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/batch"
	_ "k8s.io/kubernetes/pkg/apis/batch/install"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	cronjobstore "k8s.io/kubernetes/pkg/registry/batch/cronjob"
	jobstore "k8s.io/kubernetes/pkg/registry/batch/job"
)

type request struct {
	ID         string          `json:"id"`
	Operation  string          `json:"operation"`
	Object     json.RawMessage `json:"object"`
	OldObject  json.RawMessage `json:"oldObject,omitempty"`
	MergePatch json.RawMessage `json:"mergePatch,omitempty"`
}

type cause struct {
	Type    string `json:"type"`
	Field   string `json:"field"`
	Message string `json:"message"`
}

type verdict struct {
	ID        string          `json:"id"`
	Allowed   bool            `json:"allowed"`
	Code      int32           `json:"code,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	Message   string          `json:"message,omitempty"`
	Causes    []cause         `json:"causes,omitempty"`
	Warnings  []string        `json:"warnings,omitempty"`
	Object    json.RawMessage `json:"object,omitempty"`
	OldObject json.RawMessage `json:"oldObject,omitempty"`
}

type strategy interface {
	rest.RESTCreateStrategy
	rest.RESTUpdateStrategy
}

var (
	jobs     = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	cronjobs = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "cronjobs"}
)

func main() {
	gates := flag.String("feature-gates", "", "kube-apiserver --feature-gates, e.g. JobManagedBy=false")
	flag.Parse()
	if *gates != "" {
		if err := utilfeature.DefaultMutableFeatureGate.Set(*gates); err != nil {
			fmt.Fprintf(os.Stderr, "judge: --feature-gates: %v\n", err)
			os.Exit(2)
		}
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	for {
		line, err := in.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			var req request
			if jerr := json.Unmarshal(line, &req); jerr != nil {
				fmt.Fprintf(os.Stderr, "judge: a line is not a request: %v\n", jerr)
				os.Exit(2)
			}
			if eerr := enc.Encode(judge(req)); eerr != nil {
				fmt.Fprintf(os.Stderr, "judge: %v\n", eerr)
				os.Exit(1)
			}
		}
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "judge: %v\n", err)
			os.Exit(1)
		}
	}
}

func judge(req request) (v verdict) {
	v = verdict{ID: req.ID}
	// A panic in upstream's code fails that one request, as the apiserver's panic recovery
	// (k8s.io/apiserver pkg/server/filters WithPanicRecovery) answers it with a 500.
	defer func() {
		if r := recover(); r != nil {
			v = verdict{ID: req.ID, Code: 500, Reason: string(metav1.StatusReasonInternalError),
				Message: fmt.Sprintf("panic: %v", r)}
		}
	}()
	recorder := &warnings{}
	var obj runtime.Object
	var err error
	switch req.Operation {
	case "CREATE":
		if obj, err = decode(req.Object); err == nil {
			err = create(recorder, obj)
		}
	case "UPDATE":
		var old runtime.Object
		if old, err = decode(req.OldObject); err == nil {
			err = create(&warnings{}, old)
		}
		if err != nil {
			err = fmt.Errorf("oldObject: %w", err)
			break
		}
		restoreStatus(old, req.OldObject)
		if m, merr := meta.Accessor(old); merr == nil {
			m.SetResourceVersion("1")
		}
		v.OldObject = encode(old)
		body := req.Object
		if len(req.MergePatch) > 0 {
			if body, err = mergePatch(v.OldObject, req.MergePatch); err != nil {
				break
			}
		}
		if obj, err = decode(body); err == nil {
			if m, merr := meta.Accessor(obj); merr == nil && m.GetResourceVersion() == "" {
				m.SetResourceVersion("1")
			}
			err = update(recorder, obj, old)
		}
	default:
		err = fmt.Errorf("operation %q: want CREATE or UPDATE", req.Operation)
	}
	v.Warnings = recorder.texts
	if obj != nil {
		v.Object = encode(obj)
	}
	if err == nil {
		v.Allowed = true
		return v
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		v.Code, v.Reason, v.Message = s.Code, string(s.Reason), s.Message
		if s.Details != nil {
			for _, c := range s.Details.Causes {
				v.Causes = append(v.Causes, cause{Type: string(c.Type), Field: c.Field, Message: c.Message})
			}
		}
	} else {
		v.Code, v.Reason, v.Message = 400, string(metav1.StatusReasonBadRequest), err.Error()
	}
	return v
}

// mergePatch applies an RFC 7386 JSON merge patch.
func mergePatch(doc, patch json.RawMessage) (json.RawMessage, error) {
	var d, p any
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, apierrors.NewBadRequest("mergePatch: " + err.Error())
	}
	return json.Marshal(merge(d, p))
}

func merge(doc, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	d, ok := doc.(map[string]any)
	if !ok {
		d = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(d, k)
		} else {
			d[k] = merge(d[k], v)
		}
	}
	return d
}

// decode is the create and update handlers' decoding with fieldValidation=Strict (what kubectl
// sends by default): the strict JSON serializer, then defaulting and conversion to the internal
// version. A strict-decoding error refuses the request, as the handlers do for Strict.
func decode(body json.RawMessage) (runtime.Object, error) {
	if len(body) == 0 {
		return nil, apierrors.NewBadRequest("no object")
	}
	info, ok := runtime.SerializerInfoForMediaType(legacyscheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok || info.StrictSerializer == nil {
		return nil, fmt.Errorf("no strict JSON serializer")
	}
	decoder := legacyscheme.Codecs.DecoderToVersion(info.StrictSerializer, batch.SchemeGroupVersion)
	obj, gvk, err := decoder.Decode(body, nil, nil)
	if err != nil {
		return nil, transformDecodeError(err, gvk, body)
	}
	return obj, nil
}

// transformDecodeError words a body that does not decode as the write handlers do, strict
// decoding errors included (k8s.io/apiserver pkg/endpoints/handlers/rest.go). The endpoint's
// kind, which the judge has no URL for, is the body's own.
func transformDecodeError(err error, gvk *schema.GroupVersionKind, body []byte) error {
	if gvk != nil && gvk.Kind != "" {
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, gvk.Kind, err))
	}
	return apierrors.NewBadRequest(err.Error())
}

func strategyFor(obj runtime.Object) (strategy, schema.GroupVersionResource, error) {
	switch obj.(type) {
	case *batch.Job:
		return jobstore.Strategy, jobs, nil
	case *batch.CronJob:
		return cronjobstore.Strategy, cronjobs, nil
	}
	return nil, schema.GroupVersionResource{}, fmt.Errorf("%T is not a Job or a CronJob", obj)
}

func context_(recorder *warnings, obj runtime.Object, gvr schema.GroupVersionResource, verb string) (context.Context, metav1.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil, err
	}
	if m.GetNamespace() == "" {
		m.SetNamespace(metav1.NamespaceDefault)
	}
	ctx := genericapirequest.WithNamespace(context.Background(), m.GetNamespace())
	ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: verb, APIPrefix: "apis", APIGroup: gvr.Group,
		APIVersion: gvr.Version, Namespace: m.GetNamespace(), Resource: gvr.Resource, Name: m.GetName(),
	})
	return warning.WithWarningRecorder(ctx, recorder), m, nil
}

func create(recorder *warnings, obj runtime.Object) error {
	s, gvr, err := strategyFor(obj)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	ctx, m, err := context_(recorder, obj, gvr, "create")
	if err != nil {
		return err
	}
	// The create handler names an object from generateName before admission (handlers/create.go).
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(s.GenerateName(m.GetGenerateName()))
	}
	rest.FillObjectMetaSystemFields(m)
	return rest.BeforeCreate(s, ctx, obj)
}

func update(recorder *warnings, obj, old runtime.Object) error {
	s, gvr, err := strategyFor(obj)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if _, _, err := strategyFor(old); err != nil || fmt.Sprintf("%T", old) != fmt.Sprintf("%T", obj) {
		return apierrors.NewBadRequest("object and oldObject are not of one kind")
	}
	ctx, _, err := context_(recorder, obj, gvr, "update")
	if err != nil {
		return err
	}
	return rest.BeforeUpdate(s, ctx, obj, old)
}

// restoreStatus puts oldObject's status back after its create cleared it: a stored Job's status
// is the Job controller's, written through the status subresource.
func restoreStatus(old runtime.Object, body json.RawMessage) {
	var withStatus struct {
		Status json.RawMessage `json:"status"`
	}
	if json.Unmarshal(body, &withStatus) != nil || len(withStatus.Status) == 0 {
		return
	}
	status, err := decode(body)
	if err != nil {
		return
	}
	switch o := old.(type) {
	case *batch.Job:
		if s, ok := status.(*batch.Job); ok {
			o.Status = s.Status
		}
	case *batch.CronJob:
		if s, ok := status.(*batch.CronJob); ok {
			o.Status = s.Status
		}
	}
}

// encode writes obj as batch/v1 JSON, as the apiserver would return it.
func encode(obj runtime.Object) json.RawMessage {
	info, ok := runtime.SerializerInfoForMediaType(legacyscheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		return nil
	}
	encoder := legacyscheme.Codecs.EncoderForVersion(info.Serializer, schema.GroupVersion{Group: "batch", Version: "v1"})
	b, err := runtime.Encode(encoder, obj)
	if err != nil {
		return nil
	}
	return b
}

type warnings struct{ texts []string }

func (w *warnings) AddWarning(_, text string) { w.texts = append(w.texts, text) }
