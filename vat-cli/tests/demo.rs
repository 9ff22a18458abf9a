//! `vat demo` end to end: launched under Xvfb (an X server with no screen) on the software Vulkan
//! driver for a few frames, it must present through the backend's swapchain (a wgpu surface, a
//! `VkSwapchainKHR`), exit cleanly, and its screenshot must show the crowd.
//!
//! Needs `xvfb-run` (Debian packages `xvfb` and `xauth`; CI installs them). Without it the test fails
//! with a message saying so: it never skips.

#![allow(clippy::unwrap_used)] // Tests: a failed unwrap is a failed test.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const VAT: &str = env!("CARGO_BIN_EXE_vat");

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vat-demo-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `xvfb-run` on the PATH, or a failure that says what to install.
fn xvfb_run() -> PathBuf {
    let found = std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|p| p.join("xvfb-run")).find(|p| p.is_file()));
    match found {
        Some(p) => p,
        None => panic!(
            "xvfb-run not found: `vat demo` is tested under Xvfb. Install the Debian packages xvfb and xauth \
             (apt-get install -y xvfb xauth libxkbcommon-x11-0); CI (`cargo xtask ci`) installs them. {}",
            if std::env::var_os("CI").is_some() { "CI is set: this is a CI setup error." } else { "" }
        ),
    }
}

/// One Xvfb at a time: `xvfb-run -a` picks a free display number by looking, so two started at once
/// can pick the same one.
static XVFB: Mutex<()> = Mutex::new(());

/// Runs `vat demo ARGS` under `xvfb-run -a` (a free display number, a 24-bit screen); returns its
/// output and a description of it (status, stdout, stderr, the X server's messages) for failures.
fn demo_under_xvfb(dir: &Path, args: &[&str]) -> (Output, String) {
    let _one = XVFB.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let xvfb_log = dir.join("xvfb.log");
    let out = Command::new(xvfb_run())
        .args(["-a", "-e"])
        .arg(&xvfb_log)
        .args(["-s", "-screen 0 800x600x24", VAT, "demo"])
        .args(args)
        // The demo must not find a desktop session's display.
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .unwrap();
    let log = format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}\n--- Xvfb\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(&xvfb_log).unwrap_or_default()
    );
    (out, log)
}

/// Reads an 8-bit RGBA PNG: `(width, height, pixels)`.
fn read_png(path: &Path) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.color_type, info.bit_depth), (png::ColorType::Rgba, png::BitDepth::Eight));
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

fn rgb(px: &[u8]) -> [i32; 3] {
    [i32::from(px[0]), i32::from(px[1]), i32::from(px[2])]
}

fn close(a: [i32; 3], b: [i32; 3], tolerance: i32) -> bool {
    a.iter().zip(&b).all(|(x, y)| (x - y).abs() <= tolerance)
}

/// How the screenshot splits into sky, ground and everything else (characters, their shadows).
struct Census {
    sky: [i32; 3],
    ground: [i32; 3],
    /// Share of pixels of the lower two thirds that are neither sky nor lit ground.
    other_share: f64,
    /// Distinct colours (5 bits per channel) among those pixels: characters are tinted variously.
    other_colours: usize,
}

fn census(width: u32, height: u32, rgba: &[u8]) -> Census {
    let at = |x: u32, y: u32| rgb(&rgba[((y * width + x) * 4) as usize..][..4]);
    // The top row sees the sky (the orbit camera looks down at the crowd from above its edge).
    let sky = at(width / 2, 0);
    // The ground: the most common colour of the bottom rows (lit ground, no crowd in front of it there).
    let mut counts = std::collections::HashMap::new();
    for y in height - height / 10..height {
        for x in 0..width {
            *counts.entry(at(x, y)).or_insert(0u32) += 1;
        }
    }
    let ground = counts.into_iter().max_by_key(|&(c, n)| (n, c)).unwrap().0;
    let mut other = 0u64;
    let mut total = 0u64;
    let mut colours = std::collections::HashSet::new();
    for y in height / 3..height {
        for x in 0..width {
            let c = at(x, y);
            total += 1;
            if !close(c, sky, 6) && !close(c, ground, 6) {
                other += 1;
                colours.insert([c[0] >> 3, c[1] >> 3, c[2] >> 3]);
            }
        }
    }
    Census { sky, ground, other_share: other as f64 / total as f64, other_colours: colours.len() }
}

/// 300 characters, 5 frames, a 320x240 screenshot on `backend`: a clean exit and a visible crowd.
fn crowd_is_visible(backend: &str) {
    let dir = scratch(backend);
    let shot = dir.join("demo.png");
    let (out, log) = demo_under_xvfb(
        &dir,
        &[
            "--backend",
            backend,
            "--instances",
            "300",
            "--frames",
            "5",
            "--screenshot",
            shot.to_str().unwrap(),
            "--size",
            "320x240",
        ],
    );
    assert!(out.status.success(), "vat demo failed\n{log}");
    assert!(!log.contains("panicked"), "something panicked\n{log}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("vat demo: 5 frames"), "no summary line\n{log}");
    // Frames reach the window through the backend's swapchain, not a CPU copy.
    // Installed (as in CI), the validation layer checks the Vulkan backend's frames.
    let layer = Path::new("/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json").is_file();
    let (path, srgb) = match backend {
        "wgpu" => ("vat demo: presenting through a wgpu surface (Fifo, ", "Srgb, 320x240)"),
        _ if layer => {
            ("vat demo: presenting through VkSwapchainKHR (FIFO, ", " images, 320x240); validation layer on")
        }
        _ => ("vat demo: presenting through VkSwapchainKHR (FIFO, ", " images, 320x240)"),
    };
    let line =
        stdout.lines().find(|l| l.starts_with(path)).unwrap_or_else(|| panic!("no line {path:?}\n{log}"));
    assert!(line.ends_with(srgb) && line.to_lowercase().contains("srgb"), "not sRGB at 320x240: {line}");
    // The validation layer (enabled when installed) and the loader say nothing about the swapchain.
    assert!(!log.contains("vulkan error") && !log.contains("vulkan warning"), "Vulkan messages\n{log}");
    assert!(shot.is_file(), "no screenshot\n{log}");

    let (w, h, rgba) = read_png(&shot);
    assert_eq!((w, h), (320, 240));
    let c = census(w, h, &rgba);
    println!(
        "{backend}: sky {:?}, ground {:?}, {:.1}% of the lower two thirds is crowd or shadow, {} distinct colours there",
        c.sky,
        c.ground,
        c.other_share * 100.0,
        c.other_colours
    );
    assert!(!close(c.sky, c.ground, 6), "sky and ground look alike: is the ground drawn? {:?}", c.sky);
    // Measured on lavapipe: 300 characters cover about 7.5%; an empty ground 0%, a single character
    // close to the camera about 1%.
    assert!(c.other_share > 0.03, "the crowd covers only {:.2}% of the view", c.other_share * 100.0);
    assert!(c.other_colours >= 20, "only {} distinct colours where the crowd should be", c.other_colours);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn demo_under_xvfb_shows_the_crowd_and_exits_cleanly_wgpu() {
    crowd_is_visible("wgpu");
}

#[test]
fn demo_under_xvfb_shows_the_crowd_and_exits_cleanly_vulkan() {
    crowd_is_visible("vulkan");
}

/// The top-left `width x height` pixels of an X server's screen as RGBA8, read from the XWD file
/// Xvfb keeps its framebuffer in (`-fbdir`); `None` while the file is missing, short or not 32-bit.
fn read_xvfb_screen(path: &Path, width: u32, height: u32) -> Option<Vec<u8>> {
    let d = std::fs::read(path).ok()?;
    // The XWD header: big-endian 32-bit fields.
    let field = |i: usize| d.get(i * 4..i * 4 + 4).map(|b| u32::from_be_bytes(b.try_into().unwrap()));
    let (header, w, h, byte_order, bpp) = (field(0)? as usize, field(4)?, field(5)?, field(7)?, field(11)?);
    let (stride, masks, colours) =
        (field(12)? as usize, [field(14)?, field(15)?, field(16)?], field(19)? as usize);
    if bpp != 32 || w < width || h < height || masks.contains(&0) {
        return None;
    }
    let pixels = d.get(header + colours * 12..)?;
    let mut out = Vec::with_capacity((width * height * 4) as usize);
    for y in 0..height as usize {
        for x in 0..width as usize {
            let b: [u8; 4] = pixels.get(y * stride + x * 4..)?.get(..4)?.try_into().unwrap();
            let p = if byte_order == 0 { u32::from_le_bytes(b) } else { u32::from_be_bytes(b) };
            out.extend(masks.map(|m| ((p & m) >> m.trailing_zeros()) as u8));
            out.push(255);
        }
    }
    Some(out)
}

/// What the window shows, read from the X server's own framebuffer while the demo runs (no window
/// manager: the window is at the screen's top-left corner), must be the crowd: the swapchain's
/// images reach the screen, with the screenshot's sky and ground.
fn presented_frames_show_the_crowd(backend: &str) {
    let dir = scratch(&format!("screen-{backend}"));
    let fb = dir.join("fb");
    std::fs::create_dir_all(&fb).unwrap();
    let shot = dir.join("demo.png");
    let _one = XVFB.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut child = Command::new(xvfb_run())
        .args(["-a", "-e"])
        .arg(dir.join("xvfb.log"))
        .arg("-s")
        .arg(format!("-screen 0 400x300x24 -fbdir {}", fb.display()))
        .args([VAT, "demo", "--backend", backend, "--instances", "300", "--size", "320x240"])
        // Enough frames to be seen: about 0.1 s each here, at least a refresh interval anywhere.
        .args(["--frames", "90", "--screenshot", shot.to_str().unwrap()])
        .env_remove("WAYLAND_DISPLAY")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let mut seen = None;
    while seen.is_none() && start.elapsed() < Duration::from_secs(120) && child.try_wait().unwrap().is_none()
    {
        if let Some(rgba) = read_xvfb_screen(&fb.join("Xvfb_screen0"), 320, 240) {
            let c = census(320, 240, &rgba);
            if c.other_share > 0.03 && c.other_colours >= 20 && !close(c.sky, c.ground, 6) {
                seen = Some(c);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let log = format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "vat demo failed\n{log}");
    let screen = seen.unwrap_or_else(|| panic!("the screen never showed the crowd\n{log}"));
    let (w, h, rgba) = read_png(&shot);
    let saved = census(w, h, &rgba);
    println!(
        "{backend}: the screen showed sky {:?}, ground {:?}, {:.1}% crowd or shadow, {} colours (screenshot: {:?}, {:?})",
        screen.sky,
        screen.ground,
        screen.other_share * 100.0,
        screen.other_colours,
        saved.sky,
        saved.ground
    );
    assert!(close(screen.sky, saved.sky, 6) && close(screen.ground, saved.ground, 6), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_wgpu_surface_shows_the_crowd_on_screen() {
    presented_frames_show_the_crowd("wgpu");
}

#[test]
fn the_vulkan_swapchain_shows_the_crowd_on_screen() {
    presented_frames_show_the_crowd("vulkan");
}

/// `--resize` halfway through 8 frames: the swapchain is made again at the new size (a line says
/// so), the validation layer stays silent and the screenshot has the new size and shows the crowd.
fn resizing_makes_the_swapchain_again(backend: &str) {
    let dir = scratch(&format!("resize-{backend}"));
    let shot = dir.join("resized.png");
    let args = ["--backend", backend, "--instances", "300", "--size", "320x240", "--frames", "8"];
    let (out, log) = demo_under_xvfb(
        &dir,
        &[&args[..], &["--resize", "240x180", "--screenshot", shot.to_str().unwrap()]].concat(),
    );
    assert!(out.status.success(), "vat demo failed\n{log}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let resized = stdout
        .lines()
        .find(|l| l.starts_with("vat demo: window resized, presenting through "))
        .unwrap_or_else(|| panic!("no resize line\n{log}"));
    assert!(resized.contains("240x180)"), "{resized}");
    assert!(!log.contains("vulkan error") && !log.contains("vulkan warning"), "Vulkan messages\n{log}");
    let (w, h, rgba) = read_png(&shot);
    assert_eq!((w, h), (240, 180));
    let c = census(w, h, &rgba);
    assert!(c.other_share > 0.03 && c.other_colours >= 20, "no crowd after the resize\n{log}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn resizing_the_window_makes_the_wgpu_surface_again() {
    resizing_makes_the_swapchain_again("wgpu");
}

#[test]
fn resizing_the_window_makes_the_vulkan_swapchain_again() {
    resizing_makes_the_swapchain_again("vulkan");
}

#[test]
fn demo_with_every_toggle_flag_runs_under_xvfb() {
    let dir = scratch("flags");
    let shot = dir.join("flags.png");
    let (out, log) = demo_under_xvfb(
        &dir,
        &[
            "--instances",
            "200",
            "--frames",
            "3",
            "--size",
            "160x120",
            "--screenshot",
            shot.to_str().unwrap(),
            "--mode",
            "bone",
            "--culling",
            "gpu",
            "--no-shadows",
            "--lod-bias",
            "-1",
            "--no-cross-fade",
            "--no-attachments",
            "--far-pool",
            "off",
            "--no-stride-match",
            "--camera",
            "walk",
            "--separation",
        ],
    );
    assert!(out.status.success(), "vat demo failed\n{log}");
    assert!(!log.contains("panicked"), "something panicked\n{log}");
    assert_eq!(read_png(&shot).0, 160);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn demo_without_a_display_fails_with_one_clear_line() {
    let out = Command::new(VAT)
        .args(["demo", "--frames", "1"])
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("cannot connect to a display"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn demo_help_lists_the_keys() {
    let out = Command::new(VAT).args(["demo", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    for needle in ["--backend", "--screenshot", "--no-stride-match", "stride matching on / off", "Esc"] {
        assert!(help.contains(needle), "{needle:?} missing from:\n{help}");
    }
}

/// The screenshot census of `vat demo ASSET` (300 characters, 5 frames, 320x240, wgpu).
fn demo_census(dir: &Path, asset: &Path) -> Census {
    let shot = asset.with_extension("png");
    let (out, log) = demo_under_xvfb(
        dir,
        &[
            asset.to_str().unwrap(),
            "--instances",
            "300",
            "--frames",
            "5",
            "--screenshot",
            shot.to_str().unwrap(),
            "--size",
            "320x240",
        ],
    );
    assert!(out.status.success(), "vat demo failed\n{log}");
    let (w, h, rgba) = read_png(&shot);
    census(w, h, &rgba)
}

/// The humanoid baked at 100 times its size (centimetres) and at 0.2 m shows the same crowd in
/// `vat demo` as the metre one: the same share of the view within a factor of 1.25, no flags.
#[test]
fn demo_frames_a_centimetre_and_a_tiny_asset_like_the_humanoid() {
    let dir = scratch("scale");
    let rig = vat_procgen::humanoid();
    let options = vat_bake::prepare::BakeOptions::default();
    let mut shares = Vec::new();
    for (name, factor) in [("metres", 1.0f32), ("centimetres", 100.0), ("tiny", 0.2 / 2.07)] {
        let path = dir.join(format!("{name}.vat"));
        let bake = vat_bake::prepare::prepare(&rig.scaled(factor), &options).unwrap();
        std::fs::write(&path, bake.to_vat_bytes().unwrap()).unwrap();
        let c = demo_census(&dir, &path);
        println!("{name}: {:.2}% crowd or shadow, {} colours", c.other_share * 100.0, c.other_colours);
        assert!(!close(c.sky, c.ground, 6), "{name}: no ground");
        assert!(c.other_colours >= 20, "{name}: {} colours", c.other_colours);
        shares.push(c.other_share);
    }
    assert!(shares[0] > 0.03, "{shares:?}");
    for s in &shares[1..] {
        let ratio = s / shares[0];
        assert!((1.0 / 1.25..=1.25).contains(&ratio), "{shares:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `vat demo X.vat` plays a file of every mode the other jobs bake (soft cloth, rigid shatter, fluid
/// splash, sprite fountain): each bakes, runs three frames under Xvfb and shows something besides sky
/// and ground.
#[test]
fn demo_under_xvfb_plays_every_mode() {
    let dir = scratch("modes");
    for (source, mode) in
        [("cloth", "soft"), ("shatter", "rigid"), ("splash", "fluid"), ("fountain", "sprite")]
    {
        let file = dir.join(format!("{source}.vat"));
        let bake = Command::new(VAT)
            .args(["bake", "--procgen", source, "--out", file.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(bake.status.success(), "{source}: {}", String::from_utf8_lossy(&bake.stderr));
        let shot = dir.join(format!("{source}.png"));
        let (out, log) = demo_under_xvfb(
            &dir,
            &[
                file.to_str().unwrap(),
                "--instances",
                "60",
                "--frames",
                "3",
                "--screenshot",
                shot.to_str().unwrap(),
                "--size",
                "320x240",
            ],
        );
        assert!(out.status.success() && !log.contains("panicked"), "{source}: vat demo failed\n{log}");
        let (w, h, rgba) = read_png(&shot);
        let c = census(w, h, &rgba);
        println!(
            "{source} ({mode}): {:.2}% of the lower two thirds is neither sky nor ground",
            c.other_share * 100.0
        );
        assert!(c.other_share > 0.005, "{source} ({mode}): nothing drawn ({:.3}%)", c.other_share * 100.0);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
