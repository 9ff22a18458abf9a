//! `export_openvat`: an independent decoder (the `exr`, `png` and `gltf` crates and the arithmetic
//! of OpenVAT's published shaders, none of this crate's import code) reads the exported files and
//! must match vat's own CPU reference at every vertex and frame, within the exported format's
//! bound; then the round trip export -> import reproduces the asset.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use glam::Vec3;
use vat_core::container::Asset;
use vat_core::format::reference::{VertexAnimationView, decode_object_frame};
use vat_core::playback::Interpolation;

use super::TextureFormat;
use super::openvat::{NormalsExport, OpenVatExport, OpenVatOptions, export_openvat, read_openvat};
use crate::prepare::{BakeOptions, prepare};

/// The humanoid, 4 frames per clip (6 clips), one LOD: `.vat` bytes.
fn asset_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let rig = crate::procgen::humanoid();
        let options =
            BakeOptions { frames: Some(4), lods: crate::lods::LodOptions::Count(1), ..Default::default() };
        prepare(&rig, &options).unwrap().to_vat_bytes().unwrap()
    })
}

/// vat's own decode of every stored frame: positions and normals, frame-major.
fn reference(asset: &Asset<'_>) -> (Vec<Vec<Vec3>>, Vec<Vec<Vec3>>) {
    let view = VertexAnimationView::from_asset(asset).unwrap();
    let n = view.layout.vertex_count as usize;
    let (mut p, mut nrm) = (vec![[0.0f32; 3]; n], vec![[0.0f32; 3]; n]);
    let (mut ps, mut ns) = (Vec::new(), Vec::new());
    for (c, clip) in asset.manifest().clips.iter().enumerate() {
        for k in 0..clip.frame_count {
            let offset = crate::verify::exact_frame_offset(clip, k).unwrap();
            decode_object_frame(&view, c as u32, offset, Interpolation::Point, &mut p, &mut nrm).unwrap();
            ps.push(p.iter().map(|v| Vec3::from(*v)).collect());
            ns.push(nrm.iter().map(|v| Vec3::from(*v)).collect());
        }
    }
    (ps, ns)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vat-openvat-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// RGB texels of an exported texture, rows top to bottom, read with the image crates directly.
fn independent_texture(path: &Path) -> (usize, usize, Vec<[f32; 3]>) {
    if path.extension().unwrap() == "png" {
        let mut decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
        decoder.set_transformations(png::Transformations::IDENTITY);
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0u8; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!((info.color_type, info.bit_depth), (png::ColorType::Rgb, png::BitDepth::Sixteen));
        let texels = buf
            .chunks_exact(6)
            .map(|b| {
                let s = |i: usize| f32::from(u16::from_be_bytes([b[2 * i], b[2 * i + 1]])) / 65535.0;
                [s(0), s(1), s(2)]
            })
            .collect();
        (info.width as usize, info.height as usize, texels)
    } else {
        let image = exr::prelude::read_first_rgba_layer_from_file(
            path,
            |size, _| (size.width(), vec![[0.0f32; 3]; size.area()]),
            |(w, t): &mut (usize, Vec<[f32; 3]>), pos, (r, g, b, _a): (f32, f32, f32, f32)| {
                t[pos.y() * *w + pos.x()] = [r, g, b];
            },
        )
        .unwrap();
        let size = image.layer_data.size;
        let (_, texels) = image.layer_data.channel_data.pixels;
        (size.width(), size.height(), texels)
    }
}

/// The glb's rest POSITION and TEXCOORD_1, read with the `gltf` crate.
fn independent_mesh(path: &Path) -> (Vec<Vec3>, Vec<[f32; 2]>) {
    let gltf = gltf::Gltf::open(path).unwrap();
    let blob = gltf.blob.clone().unwrap();
    let prim = gltf.meshes().next().unwrap().primitives().next().unwrap();
    let reader = prim.reader(|_| Some(&blob));
    let positions = reader.read_positions().unwrap().map(Vec3::from).collect();
    let lookup = reader.read_tex_coords(1).unwrap().into_f32().collect();
    (positions, lookup)
}

/// Decodes the exported folder as OpenVAT's shaders do and compares with vat's reference.
fn independent_decode_matches(format: TextureFormat, normals: NormalsExport) {
    let bytes = asset_bytes();
    let asset = Asset::parse(bytes).unwrap();
    let dir = scratch(&format!("{format:?}-{normals:?}"));
    let written =
        export_openvat(&asset, &dir, &OpenVatExport { format, normals, ..Default::default() }).unwrap();
    let name = &written.name;
    let ext = format.extension();
    // The sidecar, strict JSON.
    let sidecar: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join(format!("{name}-remap_info.json"))).unwrap()).unwrap();
    let remap = &sidecar["os-remap"];
    let v3 = |k: &str| {
        Vec3::from_slice(
            &remap[k].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect::<Vec<_>>(),
        )
    };
    let (min, max) = (v3("Min"), v3("Max"));
    let frames = remap["Frames"].as_u64().unwrap() as usize;
    let (ref_p, ref_n) = reference(&asset);
    assert_eq!(frames, ref_p.len());
    // Clips: 1-based inclusive rows in texture order.
    let mut row = 1;
    for clip in &asset.manifest().clips {
        let c = &sidecar["animations"][&clip.name];
        assert_eq!(c["startFrame"].as_u64().unwrap() as usize, row, "{}", clip.name);
        row += clip.frame_count as usize;
        assert_eq!(c["endFrame"].as_u64().unwrap() as usize, row - 1);
        assert_eq!(c["looping"].as_bool().unwrap(), clip.is_looping());
    }
    let (w, h, texels) = independent_texture(&dir.join(format!("{name}_vat.{ext}")));
    let packed = normals == NormalsExport::Packed;
    assert_eq!(h, if packed { 2 * frames } else { frames });
    let (rest, lookup) = independent_mesh(&dir.join(format!("{name}.glb")));
    assert_eq!(rest.len(), w);
    let normal_tex = match normals {
        NormalsExport::Separate => Some(independent_texture(&dir.join(format!("{name}_vnrm.{ext}")))),
        NormalsExport::Packed => Some((w, h, texels.clone())),
        NormalsExport::None => {
            assert!(!dir.join(format!("{name}_vnrm.{ext}")).exists());
            None
        }
    };
    let bound = Vec3::from(written.position_bound);
    let mut worst = Vec3::ZERO;
    let mut worst_normal = 0.0f32;
    for f in 0..frames {
        // The body's vertices (the cap attachment's columns follow: tests_export_targets checks them).
        for (v, uv) in lookup.iter().enumerate().take(ref_p[f].len()) {
            // The shader: texel centre from TEXCOORD_1, the row offset by the frame.
            let (col, row0) = ((uv[0] * w as f32).floor() as usize, (uv[1] * h as f32).floor() as usize);
            let t = Vec3::from(texels[(row0 + f) * w + col]);
            let blender = min + t * (max - min);
            let decoded = rest[v] + Vec3::new(blender.x, blender.z, -blender.y);
            let e = (decoded - ref_p[f][v]).abs();
            assert!(e.cmple(bound).all(), "{format:?} {normals:?} frame {f} vertex {v}: {e} > {bound}");
            worst = worst.max(e);
            if let Some((nw, _, nt)) = &normal_tex {
                let row = row0 + f + if packed { frames } else { 0 };
                let raw = Vec3::from(nt[row * nw + col]) * 2.0 - Vec3::ONE;
                let n = Vec3::new(raw.x, raw.z, -raw.y).normalize();
                let r = ref_n[f][v];
                // atan2 of |cross| and dot: exact near 0, where f32 acos is not.
                worst_normal = worst_normal.max(n.cross(r).length().atan2(n.dot(r)).to_degrees());
            }
        }
    }
    // Normals: the format's step on each component of (n + 1) / 2.
    let normal_bound_deg = (2.0 * 3.0f32.sqrt() * format.kind_step()).to_degrees() * 1.01 + 1e-3;
    assert!(
        worst_normal <= normal_bound_deg,
        "{format:?} {normals:?}: normals {worst_normal} deg > {normal_bound_deg}"
    );
    eprintln!(
        "{format:?} normals {normals:?}: {} x {h}, max position error {:.4} / {:.4} / {:.4} mm (bound {:.4} / {:.4} / {:.4} mm), normals {worst_normal:.4} deg",
        w,
        worst.x * 1e3,
        worst.y * 1e3,
        worst.z * 1e3,
        bound.x * 1e3,
        bound.y * 1e3,
        bound.z * 1e3
    );
    let _ = std::fs::remove_dir_all(&dir);
}

impl TextureFormat {
    fn kind_step(self) -> f32 {
        self.kind().half_step()
    }
}

macro_rules! independent_decoder_tests {
    ($($test:ident: $format:ident, $normals:ident;)*) => {$(
        #[test]
        fn $test() {
            independent_decode_matches(TextureFormat::$format, NormalsExport::$normals);
        }
    )*};
}

independent_decoder_tests! {
    independent_decoder_png16_packed: Png16, Packed;
    independent_decoder_png16_separate: Png16, Separate;
    independent_decoder_png16_none: Png16, None;
    independent_decoder_exr16_packed: Exr16, Packed;
    independent_decoder_exr16_separate: Exr16, Separate;
    independent_decoder_exr16_none: Exr16, None;
    independent_decoder_exr32_packed: Exr32, Packed;
    independent_decoder_exr32_separate: Exr32, Separate;
    independent_decoder_exr32_none: Exr32, None;
}

/// vat bake -> export-openvat -> import-openvat reproduces the asset within the exported format's
/// bound, clip for clip, and the import bakes and verifies.
#[test]
fn a_round_trip_through_openvat_reproduces_the_asset() {
    let asset = Asset::parse(asset_bytes()).unwrap();
    let (ref_p, _) = reference(&asset);
    for format in [TextureFormat::Exr16, TextureFormat::Png16, TextureFormat::Exr32] {
        let dir = scratch(&format!("round-trip-{format:?}"));
        let written = export_openvat(
            &asset,
            &dir,
            &OpenVatExport { format, normals: NormalsExport::Packed, ..Default::default() },
        )
        .unwrap();
        let imported = read_openvat(&dir, &OpenVatOptions::default()).unwrap();
        let bound = Vec3::from(written.position_bound) * 1.0001;
        let mut worst = Vec3::ZERO;
        for (f, frame) in imported.sequence.positions.iter().enumerate() {
            for (v, p) in frame.iter().enumerate().take(ref_p[f].len()) {
                let e = (*p - ref_p[f][v]).abs();
                assert!(e.cmple(bound).all(), "{format:?} frame {f} vertex {v}: {e} > {bound}");
                worst = worst.max(e);
            }
        }
        let names: Vec<(&str, usize, bool)> = asset
            .manifest()
            .clips
            .iter()
            .map(|c| (c.name.as_str(), c.frame_count as usize, c.is_looping()))
            .collect();
        let mut got: Vec<(&str, usize, bool)> =
            imported.clips.iter().map(|c| (c.name.as_str(), c.frame_count(), c.looping)).collect();
        got.sort_by_key(|c| names.iter().position(|n| n.0 == c.0));
        assert_eq!(got, names, "{format:?}");
        eprintln!(
            "round trip {format:?}: max error {:.4} / {:.4} / {:.4} mm (bound {:?})",
            worst.x * 1e3,
            worst.y * 1e3,
            worst.z * 1e3,
            written.position_bound
        );
        // The import bakes in vat's formats and verifies against its decoded frames.
        let rig = imported.to_rig().unwrap();
        let options = imported
            .at_own_rates(BakeOptions { lods: crate::lods::LodOptions::Count(1), ..Default::default() });
        let bake = prepare(&rig, &options).unwrap();
        let report = crate::verify::verify_prepared(&bake, &rig).unwrap();
        assert!(report.passed, "{:?}", report.failures);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A skin-residual asset exports the frames its skin and residual decode to (vat's CPU
/// reference, `decode_skin_residual_frame`), read back within the exported format's bound; it was
/// refused ("a format with a texel per vertex per frame").
#[test]
fn a_skin_residual_asset_exports_the_frames_it_decodes_to() {
    use vat_core::format::encoding::VertexFormat;
    use vat_core::format::reference::{SkinResidualView, decode_skin_residual_frame};
    let rig = crate::procgen::humanoid();
    let options = BakeOptions {
        frames: Some(4),
        lods: crate::lods::LodOptions::Count(1),
        format: VertexFormat::SkinResidual,
        ..Default::default()
    };
    let bytes = prepare(&rig, &options).expect("it bakes").to_vat_bytes().expect("its bytes");
    let asset = Asset::parse(&bytes).expect("the written file reads back");
    let view = SkinResidualView::from_asset(&asset).expect("it is in skin-residual");
    let n = view.vertices.len();
    // The export reads each stored frame as a playback state landing on it: bit for bit the
    // stored frame's decode.
    let frames =
        vat_core::format::reference::ObjectFrames::from_asset(&asset).expect("it has a vertex animation");
    let (mut p, mut nrm) = (vec![[0.0f32; 3]; n], vec![[0.0f32; 3]; n]);
    let (mut sp, mut sn) = (p.clone(), nrm.clone());
    for (c, clip) in asset.manifest().clips.iter().enumerate() {
        for k in 0..clip.frame_count {
            let offset =
                crate::verify::exact_frame_offset(clip, k).expect("a stored frame has an exact offset");
            frames
                .decode_at(c as u32, offset, Interpolation::Point, &mut p, &mut nrm)
                .expect("the frame decodes");
            decode_skin_residual_frame(&view, clip.first_frame + k, &mut sp, &mut sn)
                .expect("the frame decodes");
            assert!(p == sp && nrm == sn, "clip {c} frame {k}");
        }
    }
    let dir = scratch("skin-residual");
    let written = export_openvat(
        &asset,
        &dir,
        &OpenVatExport { format: TextureFormat::Exr32, normals: NormalsExport::Packed, ..Default::default() },
    )
    .expect("a skin-residual asset exports");
    // The body's columns, then the cap attachment's.
    assert!(written.width > n, "{} columns for {n} body vertices", written.width);
    let imported = read_openvat(&dir, &OpenVatOptions::default()).expect("the export reads back");
    let total: u32 = asset.manifest().clips.iter().map(|c| c.frame_count).sum();
    assert_eq!(imported.sequence.positions.len(), total as usize);
    let bound = Vec3::from(written.position_bound) * 1.0001;
    for (f, frame) in imported.sequence.positions.iter().enumerate() {
        decode_skin_residual_frame(&view, f as u32, &mut p, &mut nrm).expect("the frame decodes");
        for (v, got) in frame.iter().enumerate().take(n) {
            let e = (*got - Vec3::from(p[v])).abs();
            assert!(e.cmple(bound).all(), "frame {f} vertex {v}: {e} > {bound}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A mode OpenVAT's layout cannot hold is refused by name, before anything is written (it used to
/// say "vertex animation = none is out of range").
#[test]
fn rigid_and_sprite_assets_are_refused_by_name_and_write_nothing() {
    let rigid =
        crate::rigid::bake_rigid(&crate::procgen::shatter(), &crate::rigid::RigidBakeOptions::default())
            .unwrap()
            .0;
    let sprite =
        crate::sprite::bake_sprite(&crate::procgen::fountain(), &crate::sprite::SpriteBakeOptions::default())
            .unwrap()
            .0;
    let dir = scratch("other-modes");
    for (bytes, words) in [(rigid, "a rigid-body asset"), (sprite, "a sprite asset")] {
        let asset = Asset::parse(&bytes).unwrap();
        let out = dir.join("out");
        let err = export_openvat(&asset, &out, &OpenVatExport::default()).unwrap_err().to_string();
        assert!(err.contains(words) && err.contains("only skeletal and soft-body assets export"), "{err}");
        assert!(!err.contains("out of range"), "{err}");
        assert!(!out.exists());
    }
}

/// A sidecar's bounds are printed as the JSON they are, not as the parser's values.
#[test]
fn bounds_errors_print_the_json_as_written() {
    let json = br#"{"os-remap": {"Min": [1e31, 1, 1], "Max": [2, 2, 2], "Frames": 3}}"#;
    let err = super::openvat::parse_remap_info(Path::new("q-remap_info.json"), json).unwrap_err().to_string();
    assert!(err.contains("[1e+31,1,1]") && !err.contains("Number("), "{err}");
}
