//! The deploy checks against the committed configuration and against made-up ones.

use super::*;

fn committed() -> String {
    read(&repo_root().join("edge/wrangler.toml")).unwrap()
}

#[test]
fn the_committed_config_declares_every_setting_the_edge_reads() {
    let table = production_config(&committed(), &Deployment::default(), false).unwrap();
    let read_by_edge = edge_settings(&repo_root().join("edge/src")).unwrap();
    assert!(read_by_edge.contains("BACKENDS") && read_by_edge.contains("SIGNUP_GRANT_FEN"));
    check_settings(&table, &read_by_edge).unwrap();
    check_secrets_example(
        &table,
        &read(&repo_root().join("edge/.dev.vars.example")).unwrap(),
    )
    .unwrap();
    // A setting the edge reads but nobody declares is caught, and so is a secret in vars.
    let mut more = read_by_edge.clone();
    more.insert("NEW_LIMIT".into());
    assert!(
        check_settings(&table, &more)
            .unwrap_err()
            .contains("NEW_LIMIT")
    );
    let shadowed = committed().replace("[vars]\n", "[vars]\nBACKENDS = \"[]\"\n");
    let t = production_config(&shadowed, &Deployment::default(), false).unwrap();
    assert!(
        check_settings(&t, &read_by_edge)
            .unwrap_err()
            .contains("BACKENDS")
    );
}

#[test]
fn a_deploy_fills_in_the_deployment_and_names_what_is_missing() {
    let d = Deployment {
        d1_id: Some("0f3c1a52-9d1b-4c55-8e2f-7b9a0c6d4e11".into()),
        kv_id: Some("5f2b8e0c9a7d4c3b2a1f0e9d8c7b6a59".into()),
        public_url: Some("https://onramp.example.com".into()),
        mail_http_url: Some("https://mail.example.com/send".into()),
    };
    let t = production_config(&committed(), &d, true).unwrap();
    let p = &t["env"]["production"];
    assert_eq!(
        p["d1_databases"][0]["database_id"].as_str(),
        d.d1_id.as_deref()
    );
    assert_eq!(p["kv_namespaces"][0]["id"].as_str(), d.kv_id.as_deref());
    assert_eq!(
        p["vars"]["PUBLIC_URL"].as_str(),
        Some("https://onramp.example.com")
    );
    // The local environment is left as it was.
    assert_eq!(
        t["vars"]["PUBLIC_URL"].as_str(),
        Some("http://127.0.0.1:8787")
    );
    for (field, var) in [
        (
            Deployment {
                d1_id: None,
                ..d.clone()
            },
            "ONRAMP_D1_ID",
        ),
        (
            Deployment {
                kv_id: None,
                ..d.clone()
            },
            "ONRAMP_KV_ID",
        ),
        (
            Deployment {
                public_url: None,
                ..d.clone()
            },
            "ONRAMP_PUBLIC_URL",
        ),
        (
            Deployment {
                mail_http_url: None,
                ..d.clone()
            },
            "ONRAMP_MAIL_HTTP_URL",
        ),
        (
            Deployment {
                d1_id: Some("00000000-0000-0000-0000-000000000000".into()),
                ..d.clone()
            },
            "ONRAMP_D1_ID",
        ),
        (
            Deployment {
                kv_id: Some("onramp-kv".into()),
                ..d.clone()
            },
            "ONRAMP_KV_ID",
        ),
        (
            Deployment {
                public_url: Some("http://onramp.example.com".into()),
                ..d.clone()
            },
            "ONRAMP_PUBLIC_URL",
        ),
    ] {
        let e = production_config(&committed(), &field, true).unwrap_err();
        assert!(e.contains(var), "{e}");
    }
    // A dry run leaves the ids out rather than inventing them.
    let t = production_config(&committed(), &Deployment::default(), false).unwrap();
    assert!(
        t["env"]["production"]["d1_databases"][0]
            .get("database_id")
            .is_none()
    );
}

#[test]
fn finds_settings_and_reads_startup_profiles() {
    let code =
        r#"env.var("A").ok(); db::setting(env, "B", 1); var_i64(env, "C", 2); env.secret("D")"#;
    assert_eq!(settings_in(code), ["A", "D", "B", "C"]);
    let profile = r#"{"nodes":[],"startTime":18831115755,"endTime":18831158373,"samples":[]}"#;
    assert_eq!(startup_ms(profile), Ok(42.618));
    assert!(startup_ms(r#"{"nodes":[]}"#).is_err());
}

#[test]
fn measures_a_bundle_and_refuses_one_over_the_limit() {
    let dir = std::env::temp_dir().join(format!("onramp-bundle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("index.js"), "export default {}\n".repeat(100)).unwrap();
    std::fs::write(dir.join("README.md"), "not uploaded").unwrap();
    assert!(check_bundle(&dir).unwrap_err().contains("no .wasm"));
    std::fs::write(dir.join("x-index_bg.wasm"), vec![0u8; 1 << 20]).unwrap();
    let r = check_bundle(&dir).unwrap();
    assert_eq!(r.files.len(), 2);
    assert_eq!(r.bytes, (1 << 20) + 1800);
    assert!(r.gzip_bytes < 10_000, "{r}");
    // Random bytes do not compress: 4 MiB of them is over the Free plan's limit.
    let mut noise = vec![0u8; 4 << 20];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for b in &mut noise {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    std::fs::write(dir.join("x-index_bg.wasm"), noise).unwrap();
    let e = check_bundle(&dir).unwrap_err();
    assert!(e.contains("too big"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn production_must_require_tls() {
    let off = committed().replace("REQUIRE_TLS = \"true\"", "REQUIRE_TLS = \"\"");
    assert_ne!(
        off,
        committed(),
        "the committed config sets REQUIRE_TLS in production"
    );
    let e = production_config(&off, &Deployment::default(), false).unwrap_err();
    assert!(e.contains("REQUIRE_TLS"), "{e}");
}

#[test]
fn production_binds_the_artifacts_bucket() {
    let without = committed().replace(
        "[[env.production.r2_buckets]]",
        "[[env.production.r2_other]]",
    );
    let e = production_config(&without, &Deployment::default(), false).unwrap_err();
    assert!(e.contains("ARTIFACTS"), "{e}");
}

/// Applies every migration in order, as D1 does (each file in one transaction, foreign keys
/// enforced), over a database that holds a row in every table before each of them: a migration
/// that only works on an empty database (a table rebuilt under rows that point into it) fails
/// here, not in production. Python's sqlite3 module runs it.
const APPLY_OVER_ROWS: &str = r#"
import glob, os, sqlite3, sys
db = sqlite3.connect(":memory:", isolation_level=None)
db.execute("PRAGMA foreign_keys = ON")
seeded = {}

def seed():
    tables = [r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "AND name NOT LIKE '_cf_%' AND name != 'd1_migrations' ORDER BY rowid")]
    for t in tables:
        if db.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0]:
            continue
        fks = {r[3]: (r[2], r[4]) for r in db.execute(f'PRAGMA foreign_key_list("{t}")')}
        cols, vals = [], []
        for _, name, kind, notnull, default, pk in db.execute(f'PRAGMA table_info("{t}")'):
            if name in fks:
                parent, pcol = fks[name]
                row = db.execute(f'SELECT "{pcol}" FROM "{parent}" LIMIT 1').fetchone()
                if row is None:
                    break
                value = row[0]
            elif not (notnull or pk) or default is not None:
                continue
            elif "INT" in kind.upper():
                value = 1
            elif "REAL" in kind.upper():
                value = 1.0
            else:
                value = f"seed-{t}-{name}"
            cols.append(f'"{name}"')
            vals.append(value)
        else:
            marks = ", ".join("?" for _ in vals)
            try:
                db.execute(f'INSERT INTO "{t}" ({", ".join(cols)}) VALUES ({marks})', vals)
                seeded[t] = True
            except sqlite3.Error as e:
                print(f"could not seed {t}: {e}", file=sys.stderr)

for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.sql"))):
    seed()
    sql = open(f).read()
    try:
        db.executescript("BEGIN;\n" + sql + "\nCOMMIT;")
    except sqlite3.Error as e:
        sys.exit(f"{os.path.basename(f)} fails over a database with rows: {e}")
    print(os.path.basename(f), "applied over", ", ".join(sorted(seeded)))
problems = db.execute("PRAGMA foreign_key_check").fetchall()
if problems:
    sys.exit(f"rows whose foreign keys point nowhere: {problems}")
"#;

#[test]
fn every_migration_applies_over_a_database_with_rows() {
    let dir = repo_root().join("edge/migrations");
    let out = std::process::Command::new("python3")
        .args(["-c", APPLY_OVER_ROWS])
        .arg(&dir)
        .output()
        .expect("python3 runs (Debian's, for its sqlite3)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = stdout.lines().last().unwrap_or_default();
    for table in ["users", "sessions", "api_tokens", "jobs"] {
        assert!(last.contains(table), "{table} held a row: {stdout}");
    }
}
