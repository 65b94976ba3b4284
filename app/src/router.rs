//! A small path router: the routes of the app as a type, History API navigation, and links
//! that navigate without reloading. Small enough that leptos_router's weight is not worth it.

use leptos::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

/// Every page of the app.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    Try,
    Plan,
    Status,
    Account,
    /// `/verify?token=…`, the link of the verification mail.
    Verify,
    /// `/reset?token=…`, the link of the password reset mail.
    Reset,
    Jobs,
    Job(String),
    Experiment(String),
    /// `/compare?jobs=…&e=…`, with its query string (`Router::route` fills it in).
    Compare(String),
    NotFound,
}

impl Route {
    /// The route for a location path (query and fragment already removed).
    pub fn parse(path: &str) -> Route {
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        match parts.as_slice() {
            [] => Route::Try,
            ["plan"] => Route::Plan,
            ["status"] => Route::Status,
            ["account"] => Route::Account,
            ["verify"] => Route::Verify,
            ["reset"] => Route::Reset,
            ["jobs"] => Route::Jobs,
            ["jobs", id] => Route::Job((*id).to_string()),
            ["e", id] => Route::Experiment((*id).to_string()),
            ["compare"] => Route::Compare(String::new()),
            _ => Route::NotFound,
        }
    }

    /// What the page is called, for the document title.
    pub fn title_key(&self) -> crate::i18n::Key {
        use crate::i18n::Key;
        match self {
            Route::Try => Key::NavTry,
            Route::Plan => Key::NavPlan,
            Route::Status => Key::NavStatus,
            Route::Account => Key::NavAccount,
            Route::Verify => Key::VerifyTitle,
            Route::Reset => Key::ResetTitle,
            Route::Jobs => Key::NavJobs,
            Route::Job(_) => Key::JobTitle,
            Route::Experiment(_) => Key::ExperimentTitle,
            Route::Compare(_) => Key::CompareTitle,
            Route::NotFound => Key::PageNotFound,
        }
    }
}

/// Names the page in the document title whenever the route or the language changes, and after a
/// navigation (not the first load) moves the focus to the new page's main heading, so that a
/// screen reader announces where the user is now.
pub fn follow_route_with_title_and_focus(router: Router, i: crate::state::I18n) {
    let first = std::cell::Cell::new(true);
    Effect::new(move |_| {
        let route = router.route();
        let title = format!(
            "{} · {}",
            i.t(route.title_key()),
            i.t(crate::i18n::Key::AppName)
        );
        let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
            return;
        };
        doc.set_title(&title);
        if first.replace(false) {
            return;
        }
        // The new page renders in this same turn; focus its heading once it is in the DOM.
        request_animation_frame(move || {
            let heading = web_sys::window()
                .and_then(|w| w.document())
                .and_then(|d| d.query_selector("main h1").ok().flatten())
                .and_then(|h| h.dyn_into::<web_sys::HtmlElement>().ok());
            if let Some(h) = heading {
                // Headings are not focusable by default; -1 keeps them out of the tab order.
                let _ = h.set_attribute("tabindex", "-1");
                let _ = h.focus();
            }
        });
    });
}

/// The current path, shared through context.
#[derive(Clone, Copy)]
pub struct Router {
    pub path: RwSignal<String>,
    /// The query string (`?…`), which only the comparison page reads: another comparison is
    /// another page.
    pub search: RwSignal<String>,
}

impl Router {
    /// Reads the current location and follows the browser's back and forward buttons.
    pub fn install() -> Router {
        let router = Router {
            path: RwSignal::new(current_path()),
            search: RwSignal::new(current_search()),
        };
        if let Some(w) = web_sys::window() {
            let (path, search) = (router.path, router.search);
            let on_pop = Closure::<dyn FnMut()>::new(move || {
                search.set(current_search());
                path.set(current_path());
            });
            let _ = w.add_event_listener_with_callback("popstate", on_pop.as_ref().unchecked_ref());
            // One listener for the whole life of the page.
            on_pop.forget();
        }
        provide_context(router);
        router
    }

    pub fn route(self) -> Route {
        match Route::parse(&self.path.get()) {
            Route::Compare(_) => Route::Compare(self.search.get()),
            r => r,
        }
    }

    /// Goes to `href` (a path) with a history entry, keeping the page.
    pub fn navigate(self, href: &str) {
        if let Some(h) = web_sys::window().and_then(|w| w.history().ok()) {
            let _ = h.push_state_with_url(&JsValue::NULL, "", Some(href));
        }
        self.search.set(current_search());
        self.path.set(current_path());
    }
}

pub fn use_router() -> Router {
    use_context::<Router>().unwrap_or_else(Router::install)
}

fn current_path() -> String {
    web_sys::window()
        .and_then(|w| w.location().pathname().ok())
        .unwrap_or_else(|| "/".into())
}

fn current_search() -> String {
    web_sys::window()
        .and_then(|w| w.location().search().ok())
        .unwrap_or_default()
}

/// A link that navigates in place; modified clicks (new tab) are left to the browser.
#[component]
pub fn Link(
    #[prop(into)] href: String,
    children: Children,
    #[prop(optional)] testid: &'static str,
) -> impl IntoView {
    let router = use_router();
    let target = href.clone();
    let current = {
        let href = href.clone();
        move || router.path.get() == href
    };
    view! {
        <a
            href=href
            data-testid=testid
            aria-current=move || current().then_some("page")
            on:click=move |ev: web_sys::MouseEvent| {
                if ev.ctrl_key() || ev.meta_key() || ev.shift_key() || ev.button() != 0 {
                    return;
                }
                ev.prevent_default();
                router.navigate(&target);
            }
        >
            {children()}
        </a>
    }
}
