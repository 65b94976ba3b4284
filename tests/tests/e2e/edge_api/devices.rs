//! A browser that signed in before is not kept out by wrong passwords sent from elsewhere: the
//! email's ceiling (5 per 15 minutes on this stack) holds every other client, the known browser
//! signs in through it, with a backoff of its own for its own wrong passwords; a forged proof is
//! no proof.

use super::PASSWORD;
use onramp_tests::api::{Answer, Client, unique_email};
use onramp_tests::stack::Stack;
use serde_json::json;

fn login(stack: &Stack, email: &str, ip: &str, device: Option<&str>, password: &str) -> Answer {
    let mut headers = vec![
        ("content-type", "application/json"),
        ("cf-connecting-ip", ip),
    ];
    if let Some(d) = device {
        headers.push(("cookie", d));
    }
    let body = json!({"email": email, "password": password}).to_string();
    Client::new(&stack.url).request("POST", "/api/auth/login", Some(body.into_bytes()), &headers)
}

pub(crate) fn a_known_browser_is_never_locked_out(stack: &Stack) {
    let email = unique_email("known");
    Client::signup(&stack.url, &email, PASSWORD);
    let first = login(stack, &email, "203.0.113.20", None, PASSWORD);
    assert_eq!(first.status, 200, "{}", first.shown());
    let set = first
        .set_cookie
        .iter()
        .find(|c| c.starts_with("onramp_device="))
        .unwrap_or_else(|| panic!("no device cookie: {:?}", first.set_cookie));
    for attribute in ["Path=/api/auth/login", "HttpOnly", "SameSite=Strict"] {
        assert!(set.contains(attribute), "{set}");
    }
    let device = set.split(';').next().unwrap().to_string();

    // Wrong passwords from many addresses reach the email's ceiling…
    let statuses: Vec<u16> = (0..8)
        .map(|i| {
            login(
                stack,
                &email,
                &format!("198.51.100.{i}"),
                None,
                "wrong password",
            )
            .status
        })
        .collect();
    eprintln!("wrong passwords from 8 addresses: {statuses:?}");
    assert_eq!(statuses[0], 401, "{statuses:?}");
    assert_eq!(statuses[7], 429, "{statuses:?}");
    assert!(
        statuses.iter().all(|s| [401, 429].contains(s)),
        "{statuses:?}"
    );
    // …which holds a browser that never signed in, even with the right password, and one that
    // presents a forged proof…
    assert_eq!(
        login(stack, &email, "203.0.113.21", None, PASSWORD).status,
        429
    );
    let forged = format!("onramp_device={}", "0".repeat(64));
    assert_eq!(
        login(stack, &email, "203.0.113.21", Some(&forged), PASSWORD).status,
        429
    );
    // …but not the browser that signed in before, even from the attacker's address.
    let back = login(stack, &email, "198.51.100.1", Some(&device), PASSWORD);
    assert_eq!(back.status, 200, "{}", back.shown());
    assert_eq!(back.json["email"], email.as_str());

    // Its own wrong passwords have a backoff of their own: five free, then a wait.
    let own: Vec<u16> = (0..6)
        .map(|_| login(stack, &email, "203.0.113.20", Some(&device), "a typo").status)
        .collect();
    assert_eq!(own, [401, 401, 401, 401, 401, 429]);

    // The proof is for this email only: another account's sign-in is held by its own limits.
    let other = unique_email("known-other");
    Client::signup(&stack.url, &other, PASSWORD);
    let a = login(stack, &other, "203.0.113.22", Some(&device), PASSWORD);
    assert_eq!(a.status, 200, "{}", a.shown());
}
