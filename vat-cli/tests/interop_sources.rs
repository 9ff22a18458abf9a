//! Other tools' bake folders as sources: OpenVAT's tutorial layout (found by its own naming, in
//! subfolders) and files named with flags import; `vat verify X.vat --source FOLDER` decodes the
//! folder as its import did and compares every vertex of every frame; a file that no longer matches
//! its folder fails.

// Integration tests report failure by panicking.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use vat_procgen::interop_fixtures::openvat_tutorial_fixture;

fn vat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vat")).args(args).output().unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vat-cli-sources-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn s(p: &Path) -> String {
    p.to_str().unwrap().to_owned()
}

#[test]
fn openvats_tutorial_layout_imports_and_verifies_against_its_folder() {
    let dir = scratch("tutorial");
    let bake = dir.join("normalsStrip_vat");
    let fx = openvat_tutorial_fixture("normalsStrip", 12, 8, 6);
    fx.write_tutorial_layout(&bake).unwrap();
    let out = dir.join("strip.vat");
    let o = vat(&["import-openvat", &s(&bake), "--out", &s(&out), "--lods", "1"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("mesh/M_normalsStrip_glTF_yUp.glb") && t.contains("PASSED"), "{t}");
    let o = vat(&["verify", &s(&out), "--source", &s(&bake)]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("PASSED") && t.contains("decoded as its import decodes it"), "{t}");
    // Eight texels of frame 3 in the folder's texture changed: the file no longer matches it.
    let tampered = dir.join("tampered");
    fx.write_tutorial_layout(&tampered).unwrap();
    let texture = tampered.join("packed/normalsStrip_packed_vat.png");
    let mut rgb = image_rgb16(&fx.texture);
    for px in rgb.iter_mut().skip(3 * fx.size.0).take(8) {
        px[0] = 1.0 - px[0];
    }
    std::fs::write(&texture, png16(fx.size.0, fx.size.1, &rgb)).unwrap();
    let o = vat(&["verify", &s(&out), "--source", &s(&tampered)]);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(t.contains("FAILED") && t.contains("verification failed"), "{t}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn files_discovery_cannot_find_are_named_with_flags() {
    let dir = scratch("flags");
    let bake = dir.join("bake");
    let fx = openvat_tutorial_fixture("cube", 8, 8, 4);
    fx.write_tutorial_layout(&bake).unwrap();
    let renamed = bake.join("packed/positions.png");
    std::fs::rename(bake.join("packed/cube_packed_vat.png"), &renamed).unwrap();
    let out = dir.join("cube.vat");
    let o = vat(&["import-openvat", &s(&bake), "--out", &s(&out), "--lods", "1"]);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(t.contains("cube_packed_vat.png") && t.contains("--texture"), "{t}");
    assert_eq!(t.lines().count(), 1, "one line: {t}");
    assert!(!out.exists());
    let o = vat(&["import-openvat", &s(&bake), "--texture", &s(&renamed), "--out", &s(&out), "--lods", "1"]);
    assert!(o.status.success(), "{}", text(&o));
    // verify needs the same flag to read the folder as the import did.
    let o = vat(&["verify", &s(&out), "--source", &s(&bake), "--texture", &s(&renamed)]);
    assert!(o.status.success(), "{}", text(&o));
    let o = vat(&["verify", &s(&out), "--source", &s(&bake)]);
    assert!(!o.status.success() && text(&o).contains("--texture"), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn real_bakes_verify_against_their_folders() {
    let Some(root) = vat_procgen::testdata::shared_testdata() else { return };
    let dir = scratch("real");
    for (command, name) in [
        ("import-openvat", "openvat-cube"),
        ("import-openvat", "openvat-jello"),
        ("import-houdini", "houdini-vat3-softbody"),
        ("import-houdini", "houdini-vat3-particles"),
    ] {
        let src = root.join("vat-bakes").join(name);
        let out = dir.join(format!("{name}.vat"));
        // LODs do not apply to particles (the sprite mode draws cards).
        let lods: &[&str] = if name.contains("particles") { &[] } else { &["--lods", "1"] };
        let o = vat(&[&[command, &s(&src), "--out", &s(&out)], lods].concat());
        assert!(o.status.success(), "{name}: {}", text(&o));
        let o = vat(&["verify", &s(&out), "--source", &s(&src)]);
        assert!(o.status.success(), "{name}: {}", text(&o));
        assert!(text(&o).contains("PASSED"), "{name}: {}", text(&o));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The RGB of a 16-bit RGB PNG, over 65535.
fn image_rgb16(bytes: &[u8]) -> Vec<[f32; 3]> {
    let mut reader = png::Decoder::new(std::io::Cursor::new(bytes)).read_info().unwrap();
    let mut buf = vec![0u8; reader.output_buffer_size().unwrap()];
    reader.next_frame(&mut buf).unwrap();
    buf.chunks_exact(6)
        .map(|p| {
            let c = |i: usize| f32::from(u16::from_be_bytes([p[2 * i], p[2 * i + 1]])) / 65535.0;
            [c(0), c(1), c(2)]
        })
        .collect()
}

fn png16(w: usize, h: usize, rgb: &[[f32; 3]]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, w as u32, h as u32);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Sixteen);
    let mut writer = encoder.write_header().unwrap();
    let data: Vec<u8> = rgb
        .iter()
        .flatten()
        .flat_map(|c| ((c.clamp(0.0, 1.0) * 65535.0).round() as u16).to_be_bytes())
        .collect();
    writer.write_image_data(&data).unwrap();
    writer.finish().unwrap();
    out
}

#[test]
fn a_houdini_dynamic_mesh_imports_into_the_fluid_mode_and_verifies_against_its_folder() {
    use vat_procgen::interop_fixtures::houdini_dynamic_fixture;
    let dir = scratch("dynamic");
    let bake = dir.join("export");
    let fx = houdini_dynamic_fixture(6, false);
    fx.write(&bake, "splash").unwrap();
    let out = dir.join("splash.vat");
    let o = vat(&["import-houdini", &s(&bake), "--out", &s(&out)]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("(fluid,") && t.contains("PASSED") && t.contains("6 pool triangles"), "{t}");
    let o = vat(&["inspect", &s(&out)]);
    assert!(o.status.success(), "{}", text(&o));
    let o = vat(&["verify", &s(&out), "--source", &s(&bake)]);
    let t = text(&o);
    assert!(o.status.success() && t.contains("PASSED"), "{t}");
    // The folder's positions mirrored in y: the file no longer matches it.
    let tampered = dir.join("tampered");
    fx.write(&tampered, "splash").unwrap();
    let bytes: Vec<[u8; 4]> = fx
        .pos_texels
        .iter()
        .map(|t| [t[0], 1.0 - t[1], t[2], t[3]].map(|c| (c.clamp(0.0, 1.0) * 255.0).round() as u8))
        .collect();
    std::fs::write(tampered.join("tex/splash_pos.png"), rgba8(fx.pos_size.0, fx.pos_size.1, &bytes)).unwrap();
    let o = vat(&["verify", &s(&out), "--source", &s(&tampered)]);
    let t = text(&o);
    assert!(!o.status.success() && t.contains("FAILED"), "{t}");
    // Options that do not apply are refused before anything is read.
    let o = vat(&["import-houdini", &s(&bake), "--out", &s(&out), "--lods", "2"]);
    assert!(!o.status.success() && text(&o).contains("--lods"), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_houdini_particle_bake_imports_into_the_sprite_mode_and_verifies_against_its_folder() {
    use vat_procgen::interop_fixtures::houdini_particle_fixture;
    let dir = scratch("particles");
    let bake = dir.join("export");
    houdini_particle_fixture(9, 4, 5, false).write(&bake, "sparks").unwrap();
    let out = dir.join("sparks.vat");
    let o = vat(&["import-houdini", &s(&bake), "--out", &s(&out), "--particle-size", "0.3"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("(sprite)") && t.contains("PASSED") && t.contains("0.3 m"), "{t}");
    let o = vat(&["verify", &s(&out), "--source", &s(&bake), "--particle-size", "0.3"]);
    let t = text(&o);
    assert!(o.status.success() && t.contains("PASSED"), "{t}");
    // Read with another card size, the folder no longer matches the file.
    let o = vat(&["verify", &s(&out), "--source", &s(&bake)]);
    let t = text(&o);
    assert!(!o.status.success() && t.contains("FAILED"), "{t}");
    let o = vat(&["import-houdini", &s(&bake), "--out", &s(&out), "--particle-size=-1"]);
    assert!(!o.status.success() && text(&o).contains("--particle-size"), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

fn rgba8(w: usize, h: usize, codes: &[[u8; 4]]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, w as u32, h as u32);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().unwrap();
    writer.write_image_data(&codes.concat()).unwrap();
    writer.finish().unwrap();
    out
}
