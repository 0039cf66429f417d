//! `kube::Resource` for a trimmed reading of a Kubernetes type: the same API, the same URLs and
//! kind, a type whose serde reading skips what the reconciler never reads.

/// Implements `kube::Resource` for `$view` (a struct with a `metadata: ObjectMeta` field) as
/// the API of `$of` serves it; with `metadata_api`, through the metadata API
/// (`as=PartialObjectMetadata`), as `PartialObjectMeta<$of>` is read.
macro_rules! resource_view {
    ($view:ty, $of:ty) => {
        $crate::reconciler::resource_view::resource_view!(@impl $view, $of, false);
    };
    ($view:ty, $of:ty, metadata_api) => {
        $crate::reconciler::resource_view::resource_view!(@impl $view, $of, true);
    };
    (@impl $view:ty, $of:ty, $metadata_api:literal) => {
        impl kube::Resource for $view {
            type DynamicType = ();
            type Scope = <$of as k8s_openapi::Resource>::Scope;

            fn kind(_: &()) -> std::borrow::Cow<'_, str> {
                std::borrow::Cow::Borrowed(<$of as k8s_openapi::Resource>::KIND)
            }
            fn group(_: &()) -> std::borrow::Cow<'_, str> {
                std::borrow::Cow::Borrowed(<$of as k8s_openapi::Resource>::GROUP)
            }
            fn version(_: &()) -> std::borrow::Cow<'_, str> {
                std::borrow::Cow::Borrowed(<$of as k8s_openapi::Resource>::VERSION)
            }
            fn api_version(_: &()) -> std::borrow::Cow<'_, str> {
                std::borrow::Cow::Borrowed(<$of as k8s_openapi::Resource>::API_VERSION)
            }
            fn plural(_: &()) -> std::borrow::Cow<'_, str> {
                std::borrow::Cow::Borrowed(<$of as k8s_openapi::Resource>::URL_PATH_SEGMENT)
            }
            fn metadata_api() -> bool {
                $metadata_api
            }
            fn meta(&self) -> &kube::core::ObjectMeta {
                &self.metadata
            }
            fn meta_mut(&mut self) -> &mut kube::core::ObjectMeta {
                &mut self.metadata
            }
        }
    };
}

pub(crate) use resource_view;
