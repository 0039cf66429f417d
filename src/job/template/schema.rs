//! Which Go type sits where in a pod template, as far as `apiequality.Semantic.DeepEqual`
//! compares it differently from the JSON text: quantities by value, Go maps and struct values
//! whose emptiness is Go's zero value.
//!
//! From the `core/v1` types (k8s.io/api `core/v1/types.go`, 1.37; every `resource.Quantity`
//! of a PodSpec is below, cross-checked against k8s-openapi 0.29's `v1_37` `Quantity` uses):
//! - `ResourceList` (`map[ResourceName]resource.Quantity`): container, init-container and
//!   ephemeral-container `resources.limits` / `resources.requests`, pod-level
//!   `spec.resources`, `spec.overhead`, an ephemeral volume's
//!   `volumeClaimTemplate.spec.resources`;
//! - `*resource.Quantity`: `emptyDir.sizeLimit`;
//! - `resource.Quantity` (a struct value): `resourceFieldRef.divisor` of an environment
//!   variable's `valueFrom` and of a `downwardAPI` volume item (also inside `projected`).
//!
//! The forked `reflect.DeepEqual` (k8s.io/apimachinery
//! `third_party/forked/golang/reflect/deep_equal.go`, `Equalities.DeepEqual`) treats a nil and
//! an empty map or slice alike; a struct value is equal to its zero value when every field is;
//! a nil pointer differs from a pointer to an empty struct. So `{}` is absent for a map
//! (`nodeSelector`, `labels`, a `ResourceList`, `matchLabels`, ...) and for a struct value
//! (`metadata`, a container's `resources`, a claim template's `spec`, ...), and stays `{}` for a
//! pointer (`securityContext`, `emptyDir`, pod-level `resources`, `affinity`, ...) and for
//! anything not listed here.
//!
//! Scalars keep their JSON meaning: `""`, `0` and `false` differ from absent. Go's value fields
//! (`image`, `workingDir`, ...) would equal absent, its pointer fields (`runAsUser`,
//! `activeDeadlineSeconds`, ...) would not; this table does not tell the ~700 scalar positions
//! of a PodSpec (~200 of them pointers) apart.
//! Objects kube-apiserver sends a webhook come from Go's encoder, which omits a zero value field
//! tagged `omitempty` and writes the others, the same way in `oldObject` and `object`, so the
//! difference can only show in hand-written `jobgate check` input.

/// What kind of Go value a JSON position holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ty {
    /// Not modelled: compared as JSON.
    Other,
    /// A struct value (not a pointer) with nothing modelled inside: `{}` is its zero value.
    Struct,
    /// `map[string]string`: `{}` is nil.
    StringMap,
    /// A `map[string]string` value: `null` is `""` (Go keeps the key).
    StringInMap,
    /// `ResourceList`: `{}` is nil; values are quantities, a `null` one is zero.
    ResourceList,
    /// A `resource.Quantity` map value: `null` is the zero quantity, not absent.
    QuantityInMap,
    /// `*resource.Quantity`: `null` is nil.
    QuantityPointer,
    /// `resource.Quantity` (a struct value): `null`, absent and `"0"` are all the zero value.
    QuantityValue,
    // The structs that lead to the positions above; `(value)` ones are struct values.
    /// `PodTemplateSpec` (value).
    PodTemplateSpec,
    /// `ObjectMeta` (value).
    ObjectMeta,
    /// `PodSpec` (value).
    PodSpec,
    /// `[]Container`, `[]EphemeralContainer`.
    Containers,
    /// `Container` (slice item).
    Container,
    /// `ResourceRequirements` of a container (value).
    ContainerResources,
    /// `*ResourceRequirements` of the pod.
    PodResources,
    /// `[]EnvVar`.
    EnvVars,
    /// `EnvVar` (slice item).
    EnvVar,
    /// `*EnvVarSource`.
    EnvVarSource,
    /// `*ResourceFieldSelector`.
    ResourceFieldSelector,
    /// `[]Volume`.
    Volumes,
    /// `Volume` (slice item).
    Volume,
    /// `*EmptyDirVolumeSource`.
    EmptyDir,
    /// `*FlexVolumeSource`.
    FlexVolume,
    /// `*CSIVolumeSource`.
    Csi,
    /// `*DownwardAPIVolumeSource`, `*DownwardAPIProjection`.
    DownwardApi,
    /// `[]DownwardAPIVolumeFile`.
    DownwardApiFiles,
    /// `DownwardAPIVolumeFile` (slice item).
    DownwardApiFile,
    /// `*ProjectedVolumeSource`.
    Projected,
    /// `[]VolumeProjection`.
    Projections,
    /// `VolumeProjection` (slice item).
    Projection,
    /// `*PodCertificateProjection`.
    PodCertificate,
    /// `*EphemeralVolumeSource`.
    Ephemeral,
    /// `*PersistentVolumeClaimTemplate`.
    ClaimTemplate,
    /// `PersistentVolumeClaimSpec` (value).
    ClaimSpec,
    /// `VolumeResourceRequirements` (value).
    ClaimResources,
    /// `*LabelSelector` and `*ClusterTrustBundleProjection` / `TopologySpreadConstraint`
    /// items / pod affinity terms, whose `labelSelector` (and `namespaceSelector`) lead to one.
    LabelSelector,
    /// Something holding `labelSelector` (pointer or slice item).
    Selecting,
    /// `[]TopologySpreadConstraint`, `[]PodAffinityTerm`.
    SelectingList,
    /// `*Affinity`.
    Affinity,
    /// `*NodeAffinity`.
    NodeAffinity,
    /// `[]PreferredSchedulingTerm`.
    PreferredNodeTerms,
    /// `PreferredSchedulingTerm` (slice item; `preference` is a value).
    PreferredNodeTerm,
    /// `*PodAffinity`, `*PodAntiAffinity`.
    PodAffinity,
    /// `[]WeightedPodAffinityTerm`.
    WeightedTerms,
    /// `WeightedPodAffinityTerm` (slice item; `podAffinityTerm` is a value).
    WeightedTerm,
    /// `PodAffinityTerm` as a struct value.
    AffinityTermValue,
}

/// How a position's empty object or `null` compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// As JSON: `{}` is a value, `null` is absent.
    Plain,
    /// A Go map or struct value: `{}` (or every member absent) is absent.
    ZeroWhenEmpty,
    /// A quantity, compared by value.
    Quantity,
}

impl Ty {
    /// The type of member `key` of an object of this type.
    pub(super) fn child(self, key: &str) -> Ty {
        use Ty::*;
        match (self, key) {
            (PodTemplateSpec, "metadata") => ObjectMeta,
            (PodTemplateSpec, "spec") => PodSpec,
            (ObjectMeta, "labels" | "annotations") => StringMap,
            (ClaimTemplate, "metadata") => ObjectMeta,
            (ClaimTemplate, "spec") => ClaimSpec,
            (PodSpec, "containers" | "initContainers" | "ephemeralContainers") => Containers,
            (PodSpec, "volumes") => Volumes,
            (PodSpec, "nodeSelector") => StringMap,
            (PodSpec, "overhead") => ResourceList,
            (PodSpec, "resources") => PodResources,
            (PodSpec, "affinity") => Affinity,
            (PodSpec, "topologySpreadConstraints") => SelectingList,
            (Container, "resources") => ContainerResources,
            (Container, "env") => EnvVars,
            (ContainerResources | PodResources | ClaimResources, "limits" | "requests") => {
                ResourceList
            }
            (EnvVar, "valueFrom") => EnvVarSource,
            (EnvVarSource | DownwardApiFile, "resourceFieldRef") => ResourceFieldSelector,
            (ResourceFieldSelector, "divisor") => QuantityValue,
            (Volume, "emptyDir") => EmptyDir,
            (Volume, "flexVolume") => FlexVolume,
            (Volume, "csi") => Csi,
            (Volume | Projection, "downwardAPI") => DownwardApi,
            (Volume, "projected") => Projected,
            (Volume, "ephemeral") => Ephemeral,
            (EmptyDir, "sizeLimit") => QuantityPointer,
            (FlexVolume, "options") => StringMap,
            (Csi, "volumeAttributes") => StringMap,
            (DownwardApi, "items") => DownwardApiFiles,
            (Projected, "sources") => Projections,
            (Projection, "clusterTrustBundle") => Selecting,
            (Projection, "podCertificate") => PodCertificate,
            (PodCertificate, "userAnnotations") => StringMap,
            (Ephemeral, "volumeClaimTemplate") => ClaimTemplate,
            (ClaimSpec, "resources") => ClaimResources,
            (ClaimSpec, "selector") => LabelSelector,
            (Selecting | AffinityTermValue, "labelSelector" | "namespaceSelector") => LabelSelector,
            (LabelSelector, "matchLabels") => StringMap,
            (Affinity, "nodeAffinity") => NodeAffinity,
            (Affinity, "podAffinity" | "podAntiAffinity") => PodAffinity,
            (NodeAffinity, "preferredDuringSchedulingIgnoredDuringExecution") => PreferredNodeTerms,
            (PreferredNodeTerm, "preference") => Struct,
            (PodAffinity, "requiredDuringSchedulingIgnoredDuringExecution") => SelectingList,
            (PodAffinity, "preferredDuringSchedulingIgnoredDuringExecution") => WeightedTerms,
            (WeightedTerm, "podAffinityTerm") => AffinityTermValue,
            (ResourceList, _) => QuantityInMap,
            (StringMap, _) => StringInMap,
            _ => Other,
        }
    }

    /// The type of the items of an array of this type.
    pub(super) fn item(self) -> Ty {
        use Ty::*;
        match self {
            Containers => Container,
            EnvVars => EnvVar,
            Volumes => Volume,
            DownwardApiFiles => DownwardApiFile,
            Projections => Projection,
            SelectingList => Selecting,
            PreferredNodeTerms => PreferredNodeTerm,
            WeightedTerms => WeightedTerm,
            _ => Other,
        }
    }

    pub(super) fn shape(self) -> Shape {
        use Ty::*;
        match self {
            QuantityInMap | QuantityPointer | QuantityValue => Shape::Quantity,
            // Go maps.
            StringMap | ResourceList => Shape::ZeroWhenEmpty,
            // Struct values (a slice's struct items are values too: `[null]` is `[{}]`).
            Struct | PodTemplateSpec | ObjectMeta | PodSpec | Container | ContainerResources
            | EnvVar | Volume | DownwardApiFile | Projection | ClaimSpec | ClaimResources
            | PreferredNodeTerm | WeightedTerm | AffinityTermValue => Shape::ZeroWhenEmpty,
            // `Selecting` is a pointer (`clusterTrustBundle`) or a slice item: `Plain` is exact
            // for the pointer; for the item only `null` (Go's zero item) would differ from `{}`.
            _ => Shape::Plain,
        }
    }
}
