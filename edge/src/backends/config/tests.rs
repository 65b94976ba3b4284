//! The backends' configuration as `BACKENDS` gives it: what parses, and what is refused by name.

use super::*;

#[test]
fn where_tls_is_required_a_cleartext_backend_must_say_so_by_name() {
    let one = |url: &str, extra: &str| {
        format!(r#"[{{"name":"hpc","kind":"runner","url":"{url}","secret":"s"{extra}}}]"#)
    };
    for url in ["https://hpc.example.com", "http://127.0.0.1:8788"] {
        assert!(parse_with(Some(&one(url, "")), true).is_ok(), "{url}");
    }
    let e = parse_with(Some(&one("http://10.0.0.5:8788", "")), true).unwrap_err();
    assert!(e.contains("\"hpc\"") && e.contains("REQUIRE_TLS"), "{e}");
    assert!(
        parse(Some(&one("http://10.0.0.5:8788", ""))).is_ok(),
        "not required"
    );
    let marked = one(
        "http://10.0.0.5:8788",
        r#","insecure_private_network":true"#,
    );
    assert!(parse_with(Some(&marked), true).unwrap()[0].insecure_private_network);
}

/// The folder of a job is the edge's to name: no backend's env may move it, or its output.
#[test]
fn a_backend_cannot_set_where_jobs_work_and_its_retention_reads() {
    for name in [
        "ONRAMP_JOB_DIR",
        "ONRAMP_WORK_DIR",
        "ONRAMP_OUTPUT_DIR",
        "ONRAMP_RETENTION_S",
        "ONRAMP_JOB_ID",
        "ONRAMP_REPORT_TOKEN",
        "PATH",
    ] {
        let text = format!(
            r#"[{{"name":"h","kind":"slurm","url":"http://x","secret":"u:t","env":{{"{name}":"/shared"}}}}]"#
        );
        let e = parse(Some(&text)).unwrap_err();
        assert!(e.contains(name) && e.contains("sets for every job"), "{e}");
    }
    let with = |retention: &str| {
        parse(Some(&format!(
            r#"[{{"name":"h","kind":"slurm","url":"http://x","secret":"u:t","retention":{retention}}}]"#
        )))
    };
    assert_eq!(with("\"36h\"").unwrap()[0].retention_s(), 36 * 3600);
    assert_eq!(with("null").unwrap()[0].retention_s(), 7 * 86_400);
    let e = with("\"a week\"").unwrap_err();
    assert!(e.contains("retention"), "{e}");
    let runner = parse(Some(
        r#"[{"name":"r","kind":"runner","url":"http://x","retention":"1d"}]"#,
    ));
    assert!(runner.unwrap_err().contains("retention"));
}

#[test]
fn a_slurm_backends_stop_warning_reads_and_fits_slurms_16_bits() {
    let with = |warning: &str| {
        parse(Some(&format!(
            r#"[{{"name":"h","kind":"slurm","url":"http://x","secret":"u:t","stop_warning":{warning}}}]"#
        )))
    };
    assert_eq!(with("\"10m\"").unwrap()[0].stop_warning_s(), 600);
    assert_eq!(with("\"0s\"").unwrap()[0].stop_warning_s(), 0);
    assert_eq!(with("null").unwrap()[0].stop_warning_s(), 300);
    for bad in ["\"soon\"", "\"1d\""] {
        let e = with(bad).unwrap_err();
        assert!(e.contains("stop_warning") && e.contains("18h"), "{e}");
    }
    let runner = parse(Some(
        r#"[{"name":"r","kind":"runner","url":"http://x","stop_warning":"5m"}]"#,
    ));
    assert!(runner.unwrap_err().contains("stop_warning"));
}

#[test]
fn parses_a_runner() {
    let list = parse(Some(
        r#"[{"name":"local","kind":"runner","url":"http://127.0.0.1:8788/","secret":"s","cards":{"cpu":1}}]"#,
    ))
    .unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].kind, BackendKind::Runner);
    assert_eq!(list[0].url, "http://127.0.0.1:8788");
    assert_eq!(list[0].cards["cpu"], 1);
    assert_eq!(list[0].work_dir, None);
}

#[test]
fn parses_slurm_options() {
    let list = parse(Some(
        r#"[{"name":"hpc","kind":"slurm","url":"http://h:6820","secret":"u:jwt","cards":{"cpu":1},
            "work_dir":"/shared/onramp","partition":"gpu","cpus_per_task":2,"env":{"ONRAMP_SHARED":"/shared/data"}}]"#,
    ))
    .unwrap();
    let b = &list[0];
    assert_eq!(
        (
            b.work_dir.as_deref(),
            b.partition.as_deref(),
            b.cpus_per_task
        ),
        (Some("/shared/onramp"), Some("gpu"), Some(2))
    );
    assert_eq!(b.env["ONRAMP_SHARED"], "/shared/data");
}

#[test]
fn slurm_may_hold_its_key_and_name_its_data_parser() {
    let key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    let with = |extra: &str| {
        parse(Some(&format!(
            r#"[{{"name":"hpc","kind":"slurm","url":"http://h:6820",{extra}}}]"#
        )))
    };
    let b = &with(&format!(
        r#""jwt_key":"{key}","user":"onramp","api_version":"v0.0.43""#
    ))
    .unwrap()[0];
    assert_eq!(
        (b.user.as_deref(), b.api_version.as_deref()),
        (Some("onramp"), Some("v0.0.43"))
    );
    for (bad, field) in [
        (
            format!(r#""jwt_key":"{key}","secret":"u:t""#),
            "both secret and jwt_key",
        ),
        (r#""jwt_key":"c2hvcnQ=""#.to_string(), "jwt_key is 5 bytes"),
        (r#""jwt_key":"%%%""#.to_string(), "not base64"),
        (format!(r#""jwt_key":"{key}","user":"a b""#), "user"),
        (
            format!(r#""jwt_key":"{key}","api_version":"v0.0.39""#),
            "api_version",
        ),
    ] {
        let e = with(&bad).unwrap_err();
        assert!(e.contains("hpc") && e.contains(field), "{bad}: {e}");
    }
    let e = parse(Some(
        r#"[{"name":"local","kind":"runner","url":"http://x","api_version":"v0.0.40"}]"#,
    ))
    .unwrap_err();
    assert!(
        e.contains("not a Slurm backend") && e.contains("api_version"),
        "{e}"
    );
}

#[test]
fn a_backend_may_say_how_much_ram_and_nvme_its_nodes_have() {
    let one = |extra: &str| {
        parse(Some(&format!(
            r#"[{{"name": "hpc", "kind": "runner", "url": "http://127.0.0.1:1"{extra}}}]"#
        )))
    };
    let list = one(r#", "node_ram_gib": 256, "node_nvme_gib": 0"#).unwrap();
    assert_eq!(
        list[0].node(),
        jobspec::NodeOverride {
            ram_bytes: Some(256 << 30),
            nvme_bytes: Some(0)
        }
    );
    // Without a folder to offload to, a backend's nodes offer no NVMe, whatever they hold.
    assert_eq!(
        one("").unwrap()[0].node(),
        jobspec::NodeOverride {
            ram_bytes: None,
            nvme_bytes: Some(0)
        }
    );
    let with_path = one(r#", "node_nvme_gib": 3000, "nvme_path": "/local/nvme""#).unwrap();
    assert_eq!(with_path[0].node().nvme_bytes, Some(3000 << 30));
    assert_eq!(with_path[0].job_env()[NVME_PATH_ENV], "/local/nvme");
    assert_eq!(
        one(r#", "nvme_path": "/scratch""#).unwrap()[0].node(),
        jobspec::NodeOverride::default()
    );
    for bad in [
        "scratch",
        "/scratch/../etc",
        "/a b",
        "/x;rm",
        "/x%y",
        "/x\\\\y",
    ] {
        let e = one(&format!(r#", "nvme_path": "{bad}""#)).unwrap_err();
        assert!(e.contains("nvme_path"), "{bad}: {e}");
    }
    for bad in [r#", "node_ram_gib": 0"#, r#", "node_nvme_gib": 9999999999"#] {
        let e = one(bad).unwrap_err();
        assert!(e.contains("GiB per node"), "{e}");
    }
    assert!(one(r#", "node_ram_gib": -1"#).is_err());
}

#[test]
fn empty_means_none() {
    assert_eq!(parse(None).unwrap(), vec![]);
    assert_eq!(parse(Some("  ")).unwrap(), vec![]);
}

#[test]
fn refuses_bad_config_with_a_reason() {
    let e = parse(Some("[{")).unwrap_err();
    assert!(e.starts_with("BACKENDS is not valid"), "{e}");
    let e = parse(Some(r#"[{"name":"a","kind":"runner","url":"ftp://x"}]"#)).unwrap_err();
    assert!(e.contains("not http"), "{e}");
    let e = parse(Some(
        r#"[{"name":"a","kind":"runner","url":"http://x"},{"name":"a","kind":"runner","url":"http://y"}]"#,
    ))
    .unwrap_err();
    assert!(e.contains("unique"), "{e}");
    let e = parse(Some(r#"[{"name":"a","kind":"ray","url":"http://x"}]"#)).unwrap_err();
    assert!(e.contains("unknown variant"), "{e}");
    let e = parse(Some(
        r#"[{"name":"a","kind":"slurm","url":"http://x","work_dir":"jobs"}]"#,
    ))
    .unwrap_err();
    assert!(e.contains("work_dir"), "{e}");
}

#[test]
fn refuses_env_partition_and_work_dir_that_could_break_a_script() {
    let with = |extra: &str| {
        parse(Some(&format!(
            r#"[{{"name":"hpc","kind":"slurm","url":"http://h:6820","secret":"s",{extra}}}]"#
        )))
    };
    assert!(with(r#""env":{"ONRAMP_PYTHON":"/opt/venv/bin/python","_X1":"a b 中"}"#).is_ok());
    for bad in [
        r#""env":{"A B":"x"}"#,
        r#""env":{"1X":"x"}"#,
        r#""env":{"X;id":"x"}"#,
        r#""env":{"":"x"}"#,
        r#""env":{"X":"a\nb"}"#,
        r#""env":{"X":"a\u0000b"}"#,
        r#""partition":"gpu\n#SBATCH --uid=0""#,
        r#""partition":"gpu x""#,
        r#""work_dir":"/shared/on ramp""#,
        r#""work_dir":"/shared/x\n""#,
    ] {
        let err = with(bad).expect_err(bad);
        assert!(err.contains("hpc"), "{err}");
    }
}
