//! A small WebDriver client for headless Chromium through chromedriver: open a page, find
//! elements, read text, click, type, run a script. Each browser gets a fresh profile that is
//! removed with it.

use crate::process::{Service, free_port};
use crate::stack::unique_temp_dir;
use crate::wait;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// The flags every headless Chromium is started with: no sandbox (we run as root), no GPU, and
/// nothing that phones out.
pub const CHROMIUM_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
];

/// A headless Chromium session. Dropping it ends the session, stops chromedriver and removes the
/// profile.
pub struct Browser {
    base: String,
    session: String,
    profile: PathBuf,
    // Dropped after the session is deleted.
    _driver: Service,
}

/// An element found on the page.
#[derive(Debug, Clone)]
pub struct Element(String);

const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

impl Browser {
    /// Starts chromedriver and a browser with a fresh profile.
    pub fn start(lang: Option<&str>) -> Result<Browser, String> {
        let port = free_port()?;
        let profile = unique_temp_dir("chromium-profile");
        std::fs::create_dir_all(&profile).map_err(|e| e.to_string())?;
        let log = profile.with_extension("chromedriver.log");
        let mut cmd = Command::new(chromedriver());
        cmd.arg(format!("--port={port}"));
        let mut driver = Service::start("chromedriver", cmd, &log, false)?;
        let base = format!("http://127.0.0.1:{port}");
        let status = format!("{base}/status");
        wait::until("chromedriver", Duration::from_secs(20), || {
            if let Some(s) = driver.exited() {
                return Err(format!(
                    "chromedriver exited with {s}: {}",
                    driver.log_tail(2000)
                ));
            }
            Ok(crate::http()
                .get(&status)
                .call()
                .is_ok_and(|r| r.status() == 200)
                .then_some(()))
        })?;
        let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|s| s.to_string()).collect();
        args.push(format!("--user-data-dir={}", profile.display()));
        args.push("--window-size=1280,900".into());
        if let Some(lang) = lang {
            args.push(format!("--lang={lang}"));
        }
        let mut prefs = json!({});
        if let Some(lang) = lang {
            prefs = json!({"intl": {"accept_languages": lang}});
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium(), "args": args, "prefs": prefs}
        }}});
        let v = post(&format!("{base}/session"), &caps)?;
        let session = v["value"]["sessionId"]
            .as_str()
            .ok_or_else(|| format!("no session id in {v}"))?
            .to_string();
        Ok(Browser {
            base,
            session,
            profile,
            _driver: driver,
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}/session/{}{path}", self.base, self.session)
    }

    pub fn goto(&self, url: &str) -> Result<(), String> {
        post(&self.url("/url"), &json!({ "url": url })).map(|_| ())
    }

    /// Runs a synchronous script and returns its value.
    pub fn execute(&self, script: &str, args: Value) -> Result<Value, String> {
        let v = post(
            &self.url("/execute/sync"),
            &json!({"script": script, "args": args}),
        )?;
        Ok(v["value"].clone())
    }

    /// The first element matching a CSS selector, if any.
    pub fn find(&self, css: &str) -> Result<Option<Element>, String> {
        let resp = crate::http()
            .post(&self.url("/element"))
            .send_json(json!({"using": "css selector", "value": css}))
            .map_err(|e| e.to_string())?;
        let status = resp.status().as_u16();
        let v: Value = resp
            .into_body()
            .read_json()
            .map_err(|e| format!("webdriver answer: {e}"))?;
        if status == 404 {
            return Ok(None);
        }
        if status != 200 {
            return Err(format!("find {css}: HTTP {status}: {v}"));
        }
        Ok(v["value"][ELEMENT_KEY]
            .as_str()
            .map(|id| Element(id.to_string())))
    }

    /// Waits until an element matching `css` exists.
    pub fn wait_for(&self, css: &str, timeout: Duration) -> Result<Element, String> {
        wait::until(&format!("element {css}"), timeout, || self.find(css))
    }

    /// Waits until the element matching `css` has text satisfying `pred`; returns that text.
    pub fn wait_for_text(
        &self,
        css: &str,
        timeout: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> Result<String, String> {
        let mut last = String::new();
        wait::until(&format!("text of {css}"), timeout, || {
            let Some(el) = self.find(css)? else {
                return Err(format!("{css} not on the page"));
            };
            let text = self.text(&el)?;
            if pred(&text) {
                return Ok(Some(text));
            }
            last = text;
            Err(format!("text so far: {last:?}"))
        })
    }

    pub fn text(&self, el: &Element) -> Result<String, String> {
        let v = get(&self.url(&format!("/element/{}/text", el.0)))?;
        Ok(v["value"].as_str().unwrap_or_default().to_string())
    }

    pub fn attribute(&self, el: &Element, name: &str) -> Result<Option<String>, String> {
        let v = get(&self.url(&format!("/element/{}/attribute/{name}", el.0)))?;
        Ok(v["value"].as_str().map(str::to_string))
    }

    pub fn click(&self, el: &Element) -> Result<(), String> {
        post(&self.url(&format!("/element/{}/click", el.0)), &json!({})).map(|_| ())
    }

    pub fn clear(&self, el: &Element) -> Result<(), String> {
        post(&self.url(&format!("/element/{}/clear", el.0)), &json!({})).map(|_| ())
    }

    pub fn type_text(&self, el: &Element, text: &str) -> Result<(), String> {
        post(
            &self.url(&format!("/element/{}/value", el.0)),
            &json!({ "text": text }),
        )
        .map(|_| ())
    }

    /// Sets a permission for the current page's origin (the WebDriver extension of the
    /// Permissions spec), e.g. `clipboard-read`, so that a test can read what the page copied.
    pub fn set_permission(&self, name: &str, state: &str) -> Result<(), String> {
        post(
            &self.url("/permissions"),
            &json!({"descriptor": {"name": name}, "state": state}),
        )
        .map(|_| ())
    }

    /// Resizes the browser window (WebDriver's Set Window Rect), e.g. to check a layout at a
    /// given width.
    pub fn set_window_size(&self, width: u32, height: u32) -> Result<(), String> {
        post(
            &self.url("/window/rect"),
            &json!({"width": width, "height": height}),
        )
        .map(|_| ())
    }

    /// Sends a Chrome DevTools Protocol command through chromedriver (`goog/cdp/execute`).
    pub fn cdp(&self, cmd: &str, params: Value) -> Result<Value, String> {
        post(
            &self.url("/goog/cdp/execute"),
            &json!({"cmd": cmd, "params": params}),
        )
        .map(|v| v["value"].clone())
    }

    /// Makes the pages of this tab report `prefers-reduced-motion: reduce`, as a user's system
    /// setting would (it lasts across navigations).
    pub fn prefer_reduced_motion(&self) -> Result<(), String> {
        self.cdp(
            "Emulation.setEmulatedMedia",
            json!({"features": [{"name": "prefers-reduced-motion", "value": "reduce"}]}),
        )
        .map(|_| ())
    }

    /// Errors and warnings the page logged to its console (for failure messages).
    pub fn current_url(&self) -> Result<String, String> {
        let v = get(&self.url("/url"))?;
        Ok(v["value"].as_str().unwrap_or_default().to_string())
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = crate::http()
            .delete(&format!("{}/session/{}", self.base, self.session))
            .call();
        let _ = std::fs::remove_dir_all(&self.profile);
        let _ = std::fs::remove_file(self.profile.with_extension("chromedriver.log"));
    }
}

fn chromedriver() -> String {
    std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".into())
}

fn chromium() -> String {
    std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into())
}

fn post(url: &str, body: &Value) -> Result<Value, String> {
    let resp = crate::http()
        .post(url)
        .send_json(body)
        .map_err(|e| format!("POST {url}: {e}"))?;
    answer(url, resp)
}

fn get(url: &str) -> Result<Value, String> {
    let resp = crate::http()
        .get(url)
        .call()
        .map_err(|e| format!("GET {url}: {e}"))?;
    answer(url, resp)
}

fn answer(url: &str, resp: ureq::http::Response<ureq::Body>) -> Result<Value, String> {
    let status = resp.status().as_u16();
    let v: Value = resp
        .into_body()
        .read_json()
        .map_err(|e| format!("{url}: unreadable answer: {e}"))?;
    if status != 200 {
        return Err(format!("{url}: HTTP {status}: {v}"));
    }
    Ok(v)
}
