//! Every reader entry point of the library against every class of hostile path (vat-core's read
//! gate, `vat_core::files`): a file of a valid input replaced by a symbolic link out of its folder
//! (to a *valid* copy of itself, so only the gate can refuse it), a loop of links, a FIFO, a device,
//! and, for references inside a file (glTF `uri`s), absolute paths, `..` escapes and their
//! percent-encoded forms, which must be refused the same whether or not the target exists. Names
//! that are not UTF-8 must read. A reader that blocks fails the test (each case runs under a
//! time limit) instead of hanging it.

// Integration tests report failure by panicking.
#![allow(clippy::unwrap_used)]
#![cfg(unix)]

use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use base64::Engine as _;
use vat_bake::fluid::{FluidFolder, FluidFrames as _};
use vat_bake::interop::{houdini, openvat};
use vat_bake::sequence::{SequenceFolder, SequenceOptions};
use vat_bake::sprite::{SpriteFolder, SpriteFrames as _};

/// A fresh scratch folder holding `in/` (the input) and `outside/` (beside it), removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("vat-gates-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("in")).unwrap();
        std::fs::create_dir_all(dir.join("outside")).unwrap();
        Scratch(dir)
    }
    fn input(&self) -> PathBuf {
        self.0.join("in")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The hostile classes a file inside an input folder can be replaced by.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Class {
    LinkOut,
    LinkLoop,
    Fifo,
    Device,
}

const CLASSES: [Class; 4] = [Class::LinkOut, Class::LinkLoop, Class::Fifo, Class::Device];

impl Class {
    /// Words the error must hold.
    fn expect(self) -> &'static [&'static str] {
        match self {
            Class::LinkOut => &["outside the folder", "link out of it"],
            Class::LinkLoop => &["loop of symbolic links"],
            Class::Fifo => &["FIFO", "not a regular file"],
            // A device node made here (as root), else a link to /dev/zero: refused either way,
            // as a device or as a link out of the folder.
            Class::Device => &[],
        }
    }

    /// Replaces `dir/name` (whose valid bytes are `bytes`) by this class.
    fn plant(self, scratch: &Scratch, dir: &Path, name: &str, bytes: &[u8]) {
        let path = dir.join(name);
        std::fs::remove_file(&path).unwrap();
        match self {
            Class::LinkOut => {
                let outside = scratch.0.join("outside").join(name);
                std::fs::write(&outside, bytes).unwrap();
                symlink(&outside, &path).unwrap();
            }
            Class::LinkLoop => {
                symlink(format!("{name}.loop"), &path).unwrap();
                symlink(name, dir.join(format!("{name}.loop"))).unwrap();
            }
            Class::Fifo => {
                assert!(std::process::Command::new("mkfifo").arg(&path).status().unwrap().success());
            }
            Class::Device => {
                let made = std::process::Command::new("mknod")
                    .arg(&path)
                    .args(["c", "1", "5"])
                    .stderr(std::process::Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success());
                if !made {
                    symlink("/dev/zero", &path).unwrap();
                }
            }
        }
    }
}

/// Runs `read` on a thread and returns its error text; fails the test if it succeeds, or takes more
/// than 20 s (a blocked open or an endless read).
fn refused<T: Send + 'static>(
    what: &str,
    read: impl FnOnce() -> vat_bake::Result<T> + Send + 'static,
) -> String {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(read().map(|_| ()).map_err(|e| e.to_string()));
    });
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(Ok(())) => panic!("{what}: accepted"),
        Ok(Err(e)) => e,
        Err(_) => panic!("{what}: still reading after 20 s (blocked or endless)"),
    }
}

fn check(what: &str, class: Class, message: &str) {
    assert!(class.expect().iter().all(|w| message.contains(w)), "{what} {class:?}: {message}");
    if class == Class::Device {
        assert!(
            message.contains("character device") || message.contains("outside the folder"),
            "{what} {class:?}: {message}"
        );
    }
}

fn obj_frame(dy: f32) -> Vec<u8> {
    format!("v 0 {dy} 0\nv 1 {dy} 0\nv 0 {} 0\nf 1 2 3\n", 1.0 + dy).into_bytes()
}

#[test]
fn sequence_fluid_and_sprite_folders_refuse_every_class() {
    for class in CLASSES {
        for reader in ["sequence", "fluid", "sprite"] {
            let s = Scratch::new(&format!("{reader}-{class:?}"));
            let dir = s.input();
            let (name, bytes) = if reader == "sprite" {
                for k in 0..3 {
                    let csv = format!("id,x,y,z,size,r,g,b,a\n1,0,{k},0,0.1,1,1,1,1\n");
                    std::fs::write(dir.join(format!("p{k}.csv")), csv).unwrap();
                }
                ("p1.csv", std::fs::read(dir.join("p1.csv")).unwrap())
            } else {
                for k in 0..3 {
                    std::fs::write(dir.join(format!("f{k}.obj")), obj_frame(k as f32)).unwrap();
                }
                ("f1.obj", obj_frame(1.0))
            };
            class.plant(&s, &dir, name, &bytes);
            let what = format!("{reader} folder");
            let message = match reader {
                "sequence" => refused(&what, move || SequenceFolder::open(&dir, &SequenceOptions::default())),
                "fluid" => refused(&what, move || {
                    let folder = FluidFolder::open(&dir, 30.0, 1 << 30)?;
                    (0..folder.frame_count()).try_for_each(|k| folder.frame(k).map(|_| ()))
                }),
                _ => refused(&what, move || {
                    let folder = SpriteFolder::open(&dir, 30.0, 1 << 30)?;
                    (0..folder.frame_count()).try_for_each(|k| folder.frame(k).map(|_| ()))
                }),
            };
            check(&what, class, &message);
            assert!(message.contains(name), "{what} {class:?}: the error names the file: {message}");
        }
    }
}

#[test]
fn folder_readers_read_names_that_are_not_utf8() {
    let s = Scratch::new("utf8");
    let dir = s.input();
    for k in 0..3 {
        let name = [b"f\xff".as_slice(), format!("{k}.obj").as_bytes()].concat();
        std::fs::write(dir.join(std::ffi::OsStr::from_bytes(&name)), obj_frame(k as f32)).unwrap();
    }
    let folder = SequenceFolder::open(&dir, &SequenceOptions::default()).unwrap();
    assert_eq!(vat_bake::rig::BodyFrames::frame_count(&folder), 3);
}

/// An OpenVAT and a Houdini VAT 3 bake folder from the importers' fuzz seeds.
fn bake_folder(dir: &Path, houdini: bool) -> [(String, Vec<u8>); 3] {
    let seed =
        if houdini { vat_procgen::fuzzing::houdini_seed() } else { vat_procgen::fuzzing::openvat_seed() };
    let (json, png, glb) = vat_procgen::fuzzing::split_openvat_parts(&seed)
        .expect("a built-in OpenVAT seed splits into its json, png and glb");
    let files = if houdini {
        [("q_data.json", json), ("q_pos.png", png), ("q_mesh.glb", glb)]
    } else {
        [("q-remap_info.json", json), ("q_vat.png", png), ("q.glb", glb)]
    };
    for (name, bytes) in &files {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
    files.map(|(n, b)| (n.to_owned(), b.to_vec()))
}

#[test]
fn openvat_and_houdini_folders_refuse_every_class_in_every_file() {
    for houdini in [false, true] {
        // The folders import as they are.
        let s = Scratch::new(&format!("bake-{houdini}"));
        bake_folder(&s.input(), houdini);
        if houdini {
            houdini::read_houdini(&s.input(), &houdini::HoudiniOptions::default()).unwrap();
        } else {
            openvat::read_openvat(&s.input(), &openvat::OpenVatOptions::default()).unwrap();
        }
        for file in 0..3 {
            for class in CLASSES {
                let s = Scratch::new(&format!("bake-{houdini}-{file}-{class:?}"));
                let dir = s.input();
                let files = bake_folder(&dir, houdini);
                let (name, bytes) = &files[file];
                class.plant(&s, &dir, name, bytes);
                let what = format!("{} folder, {name}", if houdini { "Houdini" } else { "OpenVAT" });
                let message = if houdini {
                    refused(&what, move || houdini::read_houdini(&dir, &houdini::HoudiniOptions::default()))
                } else {
                    refused(&what, move || openvat::read_openvat(&dir, &openvat::OpenVatOptions::default()))
                };
                check(&what, class, &message);
                assert!(message.contains(name.as_str()), "{what} {class:?}: {message}");
                assert!(!message.contains("is missing"), "{what} {class:?}: not missing: {message}");
            }
        }
    }
}

/// A `.gltf` whose one buffer is the external file `uri` (written as `buf.bin` beside it when the
/// name is plain), from the project's small skinned glTF.
fn gltf_with_buffer(dir: &Path, uri: &str) -> (PathBuf, Vec<u8>) {
    let mut json = vat_procgen::testdata::small_skinned_gltf();
    let data = json["buffers"][0]["uri"].as_str().unwrap().to_owned();
    let bytes = base64::engine::general_purpose::STANDARD.decode(data.split_once(',').unwrap().1).unwrap();
    json["buffers"][0]["uri"] = uri.into();
    let path = dir.join("model.gltf");
    std::fs::write(&path, serde_json::to_vec(&json).expect("a JSON value serialises")).unwrap();
    (path, bytes)
}

fn import(path: PathBuf) -> impl FnOnce() -> vat_bake::Result<vat_bake::rig::Rig> + Send + 'static {
    move || vat_bake::gltf_import::import_file(&path, &vat_bake::gltf_import::ImportOptions::default())
}

#[test]
fn gltf_buffer_and_image_uris_refuse_every_class() {
    let image = vat_procgen::testdata::textured_rigid_image();
    let mut png = Vec::new();
    image.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png).unwrap();
    for kind in ["buffer", "image"] {
        let write = |dir: &Path, uri: &str| -> (PathBuf, Vec<u8>) {
            if kind == "buffer" {
                gltf_with_buffer(dir, uri)
            } else {
                let path = dir.join("model.glb");
                std::fs::write(&path, vat_procgen::testdata::textured_rigid_glb_with_image_uri(uri))
                    .expect("the test folder is writable");
                (path, png.clone())
            }
        };
        // Valid: the file beside it, and a name that is not UTF-8, percent-encoded.
        for (uri, name) in [("res.bin", b"res.bin".as_slice()), ("r%FFs.bin", b"r\xffs.bin".as_slice())] {
            let s = Scratch::new(&format!("{kind}-ok"));
            let (path, bytes) = write(&s.input(), uri);
            std::fs::write(s.input().join(std::ffi::OsStr::from_bytes(name)), &bytes).unwrap();
            let rig = import(path)().unwrap();
            if kind == "image" {
                let m = rig.materials.unwrap();
                assert_eq!(m.color_images.len(), 1, "{uri}: {:?}", rig.notes);
            }
        }
        for class in CLASSES {
            let s = Scratch::new(&format!("{kind}-{class:?}"));
            let (path, bytes) = write(&s.input(), "res.bin");
            std::fs::write(s.input().join("res.bin"), &bytes).unwrap();
            class.plant(&s, &s.input(), "res.bin", &bytes);
            let message = refused(&format!("glTF {kind}"), import(path));
            check(&format!("glTF {kind}"), class, &message);
        }
        // Absolute, `..` and their percent-encoded forms: refused from the name alone, the same
        // whether the file exists or not (no existence oracle).
        let s = Scratch::new(&format!("{kind}-names"));
        let (_, bytes) = write(&s.input(), "x");
        std::fs::write(s.0.join("outside/there.bin"), &bytes).unwrap();
        let there = s.0.join("outside/there.bin").display().to_string();
        let gone = s.0.join("outside/gone.bin").display().to_string();
        for (exists, missing) in [
            (there.clone(), gone.clone()),
            ("../outside/there.bin".into(), "../outside/gone.bin".into()),
            ("..%2Foutside%2Fthere.bin".into(), "..%2Foutside%2Fgone.bin".into()),
            ("%2e%2e/outside/there.bin".into(), "%2e%2e/outside/gone.bin".into()),
            (there.replace('/', "%2F"), gone.replace('/', "%2F")),
        ] {
            let (path, _) = write(&s.input(), &exists);
            let a = refused(&format!("glTF {kind} {exists}"), import(path));
            let (path, _) = write(&s.input(), &missing);
            let b = refused(&format!("glTF {kind} {missing}"), import(path));
            assert!(a.contains("outside the folder"), "{kind} {exists}: {a}");
            assert_eq!(a.replace("there", "gone"), b, "{kind}: the outcome tells whether {exists} exists");
        }
    }
}

#[test]
fn named_inputs_must_be_regular_files_and_are_never_waited_on() {
    let s = Scratch::new("named");
    let fifo = s.input().join("model.glb");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let message = refused("a FIFO named as the glTF", import(fifo));
    assert!(message.contains("FIFO"), "{message}");
    let message = refused("/dev/zero named as the glTF", import(PathBuf::from("/dev/zero")));
    assert!(message.contains("character device"), "{message}");
    let message = refused("a folder named as the glTF", import(s.input()));
    assert!(message.contains("folder"), "{message}");
}
