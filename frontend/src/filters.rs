//! Which events the viewer's filters show: by resource, namespace, type, a
//! search in `namespace/name`, and whether BOOKMARKs are hidden.

use watchlife_protocol::{EventType, WatchEvent};

/// The viewer's filters, read once to be applied to many events. Each is
/// empty for "all".
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Filters {
    pub resource: String,
    pub namespace: String,
    pub event_type: String,
    pub search: String,
    /// BOOKMARKs hidden (they come every few seconds per resource and say
    /// only that the watch is alive at a resourceVersion).
    pub hide_bookmarks: bool,
}

impl Filters {
    /// Whether no filter is set: every event is shown.
    pub fn is_empty(&self) -> bool {
        self.resource.is_empty()
            && self.namespace.is_empty()
            && self.event_type.is_empty()
            && self.search.is_empty()
            && !self.hide_bookmarks
    }

    /// Whether an event passes the filters.
    ///
    /// A BOOKMARK or an ERROR is about the whole watch, not one object: a
    /// namespace or a name search never hides it (the resource and type
    /// filters still apply).
    pub fn shows(&self, e: &WatchEvent) -> bool {
        !(self.hide_bookmarks && e.event_type == EventType::Bookmark)
            && passes(
                &self.resource,
                &self.namespace,
                &self.event_type,
                &self.search,
                e,
            )
    }
}

/// Whether `e` passes the filters (each empty for "all"). See
/// [`Filters::shows`].
fn passes(resource: &str, namespace: &str, event_type: &str, search: &str, e: &WatchEvent) -> bool {
    let whole_watch = matches!(e.event_type, EventType::Bookmark | EventType::Error);
    (resource.is_empty() || e.target.resource == resource)
        && (whole_watch || namespace.is_empty() || e.target.namespace.as_deref() == Some(namespace))
        && (event_type.is_empty() || e.event_type.as_str() == event_type)
        && (whole_watch || search.is_empty() || e.target.key().contains(search))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_events::pod_event;

    #[test]
    fn a_search_or_a_namespace_never_hides_a_bookmark_or_an_error() {
        let event = |event_type, name: &str| {
            let mut e = pod_event(event_type, name, "9", &[]);
            if name.is_empty() {
                e.target.namespace = None;
            }
            e
        };
        let pod = event(EventType::Modified, "web-1");
        assert!(passes("", "", "", "web", &pod));
        assert!(!passes("", "", "", "db", &pod));
        assert!(!passes("", "kube-system", "", "", &pod));
        for whole in [event(EventType::Bookmark, ""), event(EventType::Error, "")] {
            assert!(passes("", "kube-system", "", "db", &whole));
            assert!(
                !passes("configmaps", "", "", "", &whole),
                "resource still applies"
            );
            assert!(!passes("", "", "ADDED", "", &whole), "type still applies");
        }
    }

    #[test]
    fn hiding_bookmarks_hides_only_bookmarks() {
        let filters = Filters {
            hide_bookmarks: true,
            ..Filters::default()
        };
        assert!(!filters.is_empty());
        assert!(!filters.shows(&pod_event(EventType::Bookmark, "", "9", &[])));
        assert!(filters.shows(&pod_event(EventType::Modified, "web-1", "9", &[])));
        assert!(filters.shows(&pod_event(EventType::Error, "", "9", &[])));
        assert!(Filters::default().shows(&pod_event(EventType::Bookmark, "", "9", &[])));
    }
}
