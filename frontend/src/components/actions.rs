//! Demo actions: each starts a story the audience can follow. Shown only
//! when the bridge accepts them (`hello.demo_actions`); the outcome comes
//! back as an `action_result` or `error` frame and is shown as a notice.
//!
//! Sending an action catches the animation up first (as the "catch up"
//! control does): what the viewer just did is then the next thing the
//! picture shows, not an event queued behind everything that had arrived.

use crate::model::Model;
use crate::on_screen::on_screen;
use crate::player::Player;
use crate::throttle::throttled_on_screen;
use leptos::prelude::*;
use watchlife_protocol::{ClientMessage, DemoAction};

/// Label and image a new page offers, so one click tells a story.
const DEFAULT_LABEL: (&str, &str) = ("tier", "frontend");
const DEFAULT_IMAGE: &str = "nginx:1.5.3";
/// Shortest time between two redraws of the lists of objects to act on as
/// objects come and go: a list that changes under the pointer is hard to
/// pick from anyway, and a busy demo would rebuild hundreds of options on
/// every frame.
const LISTS_REDRAW_MS: f64 = 1_000.0;
/// Most objects of one kind a select offers. A person picks from a few; a
/// busy demo has hundreds of pods, each living a second, and a select of
/// hundreds of options changing every second costs the page a frame each
/// time it is laid out again.
const MAX_OFFERED: usize = 50;

#[component]
pub fn Actions() -> impl IntoView {
    let model = expect_context::<Model>();
    let enabled = move || {
        model
            .hello
            .with(|h| h.as_ref().is_some_and(|h| h.demo_actions))
    };
    view! { <Show when=enabled><ActionPanel/></Show> }
}

/// Objects named by `(namespace, name)`, the way a select offers them.
type Names = Memo<Vec<(String, String)>>;
/// Objects named by `(resource, namespace, name)`.
type Objects = Memo<Vec<(String, String, String)>>;
type Select = NodeRef<leptos::html::Select>;

#[component]
fn ActionPanel() -> impl IntoView {
    let model = expect_context::<Model>();
    // The lists follow which objects exist, not their every change, and
    // only while the panel is on screen.
    let section = NodeRef::<leptos::html::Section>::new();
    let redraw = throttled_on_screen(LISTS_REDRAW_MS, on_screen(section), move || {
        model.roster.track()
    });
    let labellable = labellable(model, redraw);
    let pods = names_of(model, redraw, "Pod");
    let deployments = names_of(model, redraw, "Deployment");
    view! {
        <section node_ref=section class="actions panel" aria-label="Demo actions">
            <h2>"Demo actions " <small>"change the demo cluster and watch the events travel"</small></h2>
            <LabelRow labellable/>
            <PodRow pods/>
            <DeploymentRow deployments/>
            <ClusterRow/>
        </section>
    }
}

/// (namespace, name) of the first objects of one kind, sorted, redrawn
/// when `redraw` says.
fn names_of(model: Model, redraw: ReadSignal<u64>, kind: &'static str) -> Names {
    Memo::new(move |_| {
        redraw.track();
        model.objects.with_untracked(|o| {
            o.values()
                .filter(|h| h.target.kind == kind && !h.deleted)
                .take(MAX_OFFERED)
                .map(|h| {
                    (
                        h.target.namespace.clone().unwrap_or_default(),
                        h.target.name.clone(),
                    )
                })
                .collect::<Vec<_>>()
        })
    })
}

/// Objects as (resource, namespace, name), pods first: any can be
/// labelled. Every object of another kind, and the first pods.
fn labellable(model: Model, redraw: ReadSignal<u64>) -> Objects {
    Memo::new(move |_| {
        redraw.track();
        let mut pods = 0;
        let mut all: Vec<(String, String, String)> = model.objects.with_untracked(|o| {
            o.values()
                .filter(|h| !h.deleted)
                .filter(|h| {
                    let pod = h.target.resource == "pods";
                    pods += usize::from(pod);
                    !pod || pods <= MAX_OFFERED
                })
                .map(|h| {
                    (
                        h.target.resource.clone(),
                        h.target.namespace.clone().unwrap_or_default(),
                        h.target.name.clone(),
                    )
                })
                .collect()
        });
        all.sort_by_key(|(r, _, _)| r != "pods");
        all
    })
}

/// The value a select shows. The selects are read when a button is
/// pressed: the action acts on what the select shows, even when the list
/// changed since it was chosen.
fn shown(select: Select) -> String {
    select
        .get_untracked()
        .map(|s| s.value())
        .unwrap_or_default()
}

/// The `namespace/name` the select shows, or the first one offered.
fn pick(select: Select, offered: Vec<(String, String)>) -> Option<(String, String)> {
    let c = shown(select);
    offered
        .into_iter()
        .find(|(ns, n)| c.is_empty() || format!("{ns}/{n}") == c)
}

/// Sends demo actions to the bridge. `Copy`: handles only.
#[derive(Clone, Copy)]
struct Sender {
    model: Model,
    player: Player,
}

impl Sender {
    /// From the page's context.
    fn here() -> Sender {
        Sender {
            model: expect_context::<Model>(),
            player: expect_context::<Player>(),
        }
    }

    /// Catches the animation up, then sends `action`; or says why it could
    /// not be sent.
    fn send(self, action: DemoAction) {
        self.player.catch_up();
        if !self.model.send(&ClientMessage::Action { action }) {
            self.model.tell(
                "Not connected to the bridge: the action was not sent.".into(),
                true,
            );
        }
    }
}

/// What a select of `names` offers, as its options' values.
fn keys(names: Names) -> Memo<Vec<String>> {
    Memo::new(move |_| {
        names.with(|n| {
            n.iter()
                .map(|(ns, n)| format!("{ns}/{n}"))
                .collect::<Vec<_>>()
        })
    })
}

/// A select of objects of one kind, after its `words`, remembering the
/// viewer's choice.
#[component]
fn NameSelect(
    words: &'static str,
    id: &'static str,
    select: Select,
    names: Names,
) -> impl IntoView {
    let chosen = RwSignal::new(String::new());
    view! {
        <label>{words}
            <select node_ref=select id=id on:change=move |ev| chosen.set(event_target_value(&ev))>
                <Options values=keys(names) chosen/>
            </select>
        </label>
    }
}

/// A button that acts on the object its select shows; disabled while
/// there is none to act on.
#[component]
fn PickedButton(
    id: &'static str,
    select: Select,
    offered: Names,
    act: impl Fn(String, String) -> DemoAction + 'static,
    children: Children,
) -> impl IntoView {
    let sender = Sender::here();
    view! {
        <button id=id disabled=move || offered.with(Vec::is_empty) on:click=move |_| {
            if let Some((namespace, name)) = pick(select, offered.get_untracked()) {
                sender.send(act(namespace, name));
            }
        }>{children()}</button>
    }
}

/// A text input bound to `value`.
#[component]
fn TextInput(id: &'static str, size: &'static str, value: RwSignal<String>) -> impl IntoView {
    view! {
        <input id=id size=size prop:value=move || value.get() on:input=move |ev| value.set(event_target_value(&ev))/>
    }
}

/// Adds a label to any object.
#[component]
fn LabelRow(labellable: Objects) -> impl IntoView {
    let sender = Sender::here();
    let target = RwSignal::new(String::new());
    let key = RwSignal::new(DEFAULT_LABEL.0.to_string());
    let value = RwSignal::new(DEFAULT_LABEL.1.to_string());
    let object_select = Select::new();
    let objects = Memo::new(move |_| {
        labellable.with(|l| {
            l.iter()
                .map(|(r, ns, n)| format!("{r} {ns}/{n}"))
                .collect::<Vec<_>>()
        })
    });
    let label = move |_| {
        let chosen = shown(object_select);
        let found = labellable
            .get_untracked()
            .into_iter()
            .find(|(r, ns, n)| chosen.is_empty() || format!("{r} {ns}/{n}") == chosen);
        if let Some((resource, namespace, name)) = found {
            sender.send(DemoAction::Label {
                resource,
                namespace,
                name,
                key: key.get_untracked(),
                value: value.get_untracked(),
            });
        }
    };
    view! {
        <div class="action-row">
            <label>"object "
                <select node_ref=object_select id="action-object" on:change=move |ev| target.set(event_target_value(&ev))>
                    <Options values=objects chosen=target/>
                </select>
            </label>
            <label>"label "
                <TextInput id="label-key" size="8" value=key/>
            </label>
            "="
            <input id="label-value" size="10" aria-label="label value" prop:value=move || value.get() on:input=move |ev| value.set(event_target_value(&ev))/>
            <button id="action-label" on:click=label>"add label"</button>
        </div>
    }
}

/// Deletes a pod.
#[component]
fn PodRow(pods: Names) -> impl IntoView {
    let pod_select = Select::new();
    view! {
        <div class="action-row">
            <NameSelect words="pod " id="action-pod" select=pod_select names=pods/>
            <PickedButton id="action-delete-pod" select=pod_select offered=pods
                act=|namespace, name| DemoAction::DeletePod { namespace, name }>"delete pod"</PickedButton>
        </div>
    }
}

/// Scales a deployment, or sets its image.
#[component]
fn DeploymentRow(deployments: Names) -> impl IntoView {
    let image = RwSignal::new(DEFAULT_IMAGE.to_string());
    let replicas = RwSignal::new(3_u32);
    let deployment_select = Select::new();
    view! {
        <div class="action-row">
            <NameSelect words="deployment " id="action-deployment" select=deployment_select names=deployments/>
            <label>"replicas "
                <input id="replicas" type="number" min="0" max="20" prop:value=move || replicas.get().to_string()
                    on:input=move |ev| if let Ok(n) = event_target_value(&ev).parse() { replicas.set(n) }/>
            </label>
            <PickedButton id="action-scale" select=deployment_select offered=deployments
                act=move |namespace, name| DemoAction::Scale { namespace, name, replicas: replicas.get_untracked() }>"scale"</PickedButton>
            <label>"image "
                <TextInput id="image" size="14" value=image/>
            </label>
            <PickedButton id="action-image" select=deployment_select offered=deployments
                act=move |namespace, name| DemoAction::SetImage { namespace, name, image: image.get_untracked() }>"set image"</PickedButton>
        </div>
    }
}

/// Actions on the whole demo cluster: its etcd and its watches.
#[component]
fn ClusterRow() -> impl IntoView {
    let sender = Sender::here();
    view! {
        <div class="action-row">
            <button id="action-compact" on:click=move |_| sender.send(DemoAction::Compact)
                title="Compact etcd's history: a watch from an older RV gets 410 Gone">"compact"</button>
            <button id="action-drop" on:click=move |_| sender.send(DemoAction::DropWatches)
                title="Close every watch: each watcher re-watches or relists">"drop watches"</button>
            <button id="action-slow" on:click=move |_| sender.send(DemoAction::SlowWatcher)
                title="Make one watcher too slow: the dispatcher waits for it at most its time budget, then closes it">"slow watcher"</button>
        </div>
    }
}

/// A select's options, one per value, drawn in place: a redraw sets each
/// option element's value, text and selectedness, so the value the viewer
/// chose stays chosen wherever the list moves it, and elements are added
/// or removed only where the count changed. Not a keyed `<For>`: leptos
/// 0.8's gave each option a reactive owner that outlived it (measured on a
/// busy demo: about a hundred a second, 72 bytes each, the page's whole
/// memory climb). Options stay in the order they were first offered, new
/// ones last: a busy demo adds and removes objects every second, and a
/// sorted list would move most of its options each time.
#[component]
fn Options(values: Memo<Vec<String>>, chosen: RwSignal<String>) -> impl IntoView {
    let ordered = Memo::new(move |before: Option<&Vec<String>>| {
        values.with(|fresh| stable_order(before.map_or(&[][..], Vec::as_slice), fresh))
    });
    move || {
        let chosen = chosen.get_untracked();
        ordered
            .get()
            .into_iter()
            .map(|v| {
                let selected = v == chosen;
                let text = v.clone();
                view! { <option value=v prop:selected=selected>{text}</option> }
            })
            .collect_view()
    }
}

/// `fresh` with the values also in `before` in `before`'s order, followed by
/// the new ones in `fresh`'s order.
fn stable_order(before: &[String], fresh: &[String]) -> Vec<String> {
    let offered: std::collections::HashSet<&String> = fresh.iter().collect();
    let kept: std::collections::HashSet<&String> = before.iter().collect();
    before
        .iter()
        .filter(|v| offered.contains(v))
        .chain(fresh.iter().filter(|v| !kept.contains(v)))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::stable_order;

    #[test]
    fn options_keep_their_order_and_new_ones_come_last() {
        let list = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert_eq!(stable_order(&[], &list("b a")), list("b a"));
        assert_eq!(
            stable_order(&list("c a b"), &list("a b d c e")),
            list("c a b d e")
        );
        assert_eq!(stable_order(&list("c a b"), &list("b x")), list("b x"));
    }
}
