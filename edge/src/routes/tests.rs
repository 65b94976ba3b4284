//! The route table's own tests: lookups, limits and the table's invariants.
use super::*;
use proptest::prelude::*;

#[test]
fn matches_templates_and_methods() {
    assert_eq!(find("GET", "/api/me"), Matched::Route(Me, vec![]));
    assert_eq!(
        find("GET", "/api/jobs/abc/logs"),
        Matched::Route(JobLogs, vec!["abc".into()])
    );
    assert_eq!(
        find("PUT", "/api/jobs/abc/artifacts/a%2Fb"),
        Matched::Route(UploadPart, vec!["abc".into(), "a%2Fb".into()])
    );
    assert_eq!(find("GET", "/api/jobs/abc/artifacts/a/b"), Matched::NoRoute);
    assert_eq!(find("POST", "/api/jobs"), Matched::Route(SubmitJob, vec![]));
    assert_eq!(
        find("DELETE", "/api/me"),
        Matched::WrongMethod(vec!["GET", "HEAD"])
    );
    // HEAD is answered wherever GET is, and only there.
    assert_eq!(
        find("HEAD", "/api/jobs/abc/artifacts/a%2Fb"),
        Matched::Route(GetArtifact, vec!["abc".into(), "a%2Fb".into()])
    );
    assert_eq!(
        find("HEAD", "/api/auth/login"),
        Matched::WrongMethod(vec!["POST"])
    );
    assert_eq!(find("GET", "/api/jobs//logs"), Matched::NoRoute);
    assert_eq!(find("GET", "/api/nope"), Matched::NoRoute);
}

#[test]
fn every_route_is_unique_and_reachable() {
    for (i, a) in ROUTES.iter().enumerate() {
        let concrete = a.path.replace("{id}", "x").replace("{name}", "n");
        let params = a
            .path
            .split('/')
            .filter_map(|seg| match seg {
                "{id}" => Some("x".to_string()),
                "{name}" => Some("n".to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(
            find(a.method, &concrete),
            Matched::Route(a.id, params),
            "{a:?}"
        );
        for b in &ROUTES[i + 1..] {
            assert!(a.id != b.id && (a.method, a.path) != (b.method, b.path));
        }
    }
}

proptest! {
    #[test]
    fn matching_never_panics(method in "[A-Z]{0,7}", path in "(/[a-z{}.]{0,8}){0,6}") {
        let _ = find(&method, &path);
    }
}
