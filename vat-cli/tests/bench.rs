//! `vat bench --json` with tiny counts: the documented keys are there and hold sensible values.

// Integration tests report failure by panicking.
#![allow(clippy::unwrap_used)]

use std::process::Command;

#[test]
fn bench_json_has_the_documented_keys() {
    let out = Command::new(env!("CARGO_BIN_EXE_vat"))
        .args([
            "bench",
            "--instances",
            "50,200",
            "--frames",
            "5",
            "--warmup",
            "1",
            "--baseline-frames",
            "1",
            "--gpu-instances",
            "20",
            "--gpu-frames",
            "1",
            "--size",
            "32x32",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();

    let cpu = json["cpu"].as_array().unwrap();
    // 2 counts x 2 scenarios x 2 culling modes.
    assert_eq!(cpu.len(), 8);
    for n in [50, 200] {
        for culling in ["cpu", "gpu"] {
            let row = cpu.iter().find(|r| r["instances"] == n && r["culling"] == culling).unwrap();
            assert!(row["total_ms"].as_f64().unwrap() >= 0.0);
            for key in ["scenario", "simulation_ms", "cull_lod_ms", "gather_ms", "upload_bytes", "frames"] {
                assert!(!row[key].is_null(), "cpu row lacks {key}: {row}");
            }
        }
    }
    // The LOD split covers every instance of a CPU-culled static frame in view or not.
    let split = cpu.iter().find(|r| r["culling"] == "cpu").unwrap()["lod_split"].as_array().unwrap();
    assert_eq!(split.len(), json["asset"]["lod_triangles"].as_array().unwrap().len());

    let baseline = json["baseline_cpu"].as_array().unwrap();
    assert_eq!(baseline.len(), 2);
    assert!(baseline.iter().all(|b| b["total_ms"].as_f64().unwrap() > 0.0));
    assert_eq!(baseline[0]["upload_bytes"], 50 * 24 * json["asset"]["vertices"].as_u64().unwrap());

    // CI always has an adapter (lavapipe): the GPU section ran.
    let gpu = json["gpu"].as_array().unwrap_or_else(|| panic!("no gpu section: {}", json["gpu_skipped"]));
    for mode in ["vat", "bone", "baseline"] {
        let row = gpu.iter().find(|r| r["mode"] == mode).unwrap();
        assert!(row["frame_ms"].as_f64().unwrap() > 0.0, "{row}");
        assert!(row.get("gpu_ms").is_some());
    }
}
