//! Where the source of `vat bake`, `vat verify` and the imports comes from: one [`Input`] per mode
//! and kind of input, loaded into a [`vat_bake::Source`]. What follows the load (bake, write,
//! read back, verify, report) is the same for every mode (`crate::bake`).

use std::path::Path;

use anyhow::{Context, Result, bail};
use vat_bake::Source;
use vat_bake::fluid::{FluidFolder, FluidFrames};
use vat_bake::gltf_import::{self, ImportOptions};
use vat_bake::interop::houdini::HoudiniFiles;
use vat_bake::rig::Rig;
use vat_bake::rigid::RigidSource;
use vat_bake::sprite::{SpriteFolder, SpriteFrames};
use vat_procgen as procgen;

/// Where a source comes from: one variant per mode.
pub(crate) enum Input<'a> {
    /// A rig (soft mode: skeletal or a mesh sequence).
    Rig(RigSource<'a>),
    /// Rigid pieces.
    Rigid(RigidInput<'a>),
    /// Fluid frames.
    Fluid(FluidInput<'a>),
    /// Particle frames.
    Sprite(SpriteInput<'a>),
}

/// What loading a source needs besides the input.
pub(crate) struct Load<'a> {
    /// The memory budget (`--max-memory`).
    pub(crate) max_memory: u64,
    /// The rate a glTF's node-carried pieces are sampled at (rigid mode).
    pub(crate) fps: f32,
    /// The skin a glTF rig keeps (`--skin`).
    pub(crate) skin: Option<usize>,
    /// The folder a glTF's external files must lie in (`--resource-root`).
    pub(crate) resource_root: Option<&'a Path>,
}

impl Input<'_> {
    /// The source, for messages: its path, or `procedural NAME`.
    pub(crate) fn describe(&self) -> String {
        match self {
            Input::Rig(RigSource::File(p) | RigSource::Sequence(p, _))
            | Input::Rigid(RigidInput::File(p) | RigidInput::Sequence(p, _) | RigidInput::Houdini(p, _, _))
            | Input::Fluid(FluidInput::Folder(p, _) | FluidInput::Houdini(p, _))
            | Input::Sprite(SpriteInput::Folder(p, _) | SpriteInput::Houdini(p, _, _)) => {
                p.display().to_string()
            }
            Input::Rig(RigSource::Procedural(name))
            | Input::Rigid(RigidInput::Procedural(name))
            | Input::Fluid(FluidInput::Procedural(name))
            | Input::Sprite(SpriteInput::Procedural(name)) => format!("procedural {name}"),
        }
    }

    /// Whether the source is a seamless loop whatever `--loop` says: the built-in particle fountain,
    /// and VAT 3's particle and dynamic-mesh bakes (its shaders loop them).
    pub(crate) fn loops(&self) -> bool {
        matches!(
            self,
            Input::Sprite(SpriteInput::Procedural(_) | SpriteInput::Houdini(..))
                | Input::Fluid(FluidInput::Houdini(..))
        )
    }

    /// Reads or builds the source: one line per mode.
    pub(crate) fn load(&self, load: &Load<'_>) -> Result<Box<dyn Source>> {
        Ok(match self {
            Input::Rig(input) => Box::new(load_rig(input, load.skin, load.max_memory, load.resource_root)?),
            Input::Rigid(input) => {
                Box::new(load_rigid(input, load.fps, load.max_memory, load.resource_root)?)
            }
            Input::Fluid(input) => Box::new(load_fluid(input, load.max_memory)?),
            Input::Sprite(input) => Box::new(load_sprite(input, load.max_memory)?),
        })
    }
}

/// Where a rig comes from: a glTF file, a mesh-sequence folder (at `fps`), or a built-in source.
pub(crate) enum RigSource<'a> {
    File(&'a Path),
    Sequence(&'a Path, f32),
    Procedural(&'a str),
}

/// Imports the glTF, opens the mesh-sequence folder (its frames streamed as they are baked) or
/// builds the built-in rig.
pub(crate) fn load_rig(
    source: &RigSource<'_>,
    skin: Option<usize>,
    max_memory: u64,
    resource_root: Option<&Path>,
) -> Result<Rig> {
    match *source {
        RigSource::File(path) => Ok(gltf_import::import_file(
            path,
            &ImportOptions { skin, max_memory, resource_root: resource_root.map(Path::to_path_buf) },
        )?),
        RigSource::Sequence(dir, fps) => {
            if skin.is_some() {
                bail!("{}: --skin does not apply to a mesh sequence", dir.display());
            }
            let rig = vat_bake::sequence::sequence_rig(
                dir,
                &vat_bake::sequence::SequenceOptions { fps, max_memory },
            )
            .with_context(|| format!("{}: cannot read the mesh sequence", dir.display()))?;
            let frames = rig.streamed_body.as_ref().map_or(0, |b| b.frames.frame_count());
            eprintln!(
                "note: {}: {frames} frames at {fps} fps (soft-body, streamed from the files)",
                dir.display()
            );
            Ok(rig)
        }
        RigSource::Procedural(name) => match procgen::by_name(name) {
            Some(rig) => Ok(rig?),
            None => bail!("no built-in source named {name:?} (built-in: {})", procgen::SOURCES.join(", ")),
        },
    }
}

/// Where a rigid source comes from.
pub(crate) enum RigidInput<'a> {
    /// A glTF whose animated nodes carry meshes.
    File(&'a Path),
    /// A mesh-sequence folder (at a frame rate) whose pieces are detected as rigid.
    Sequence(&'a Path, f32),
    /// A built-in source ([`vat_procgen::RIGID_SOURCES`]).
    Procedural(&'a str),
    /// A SideFX Labs VAT 3 rigid-body bake folder, with the frames baked per source frame
    /// (`None`: chosen by the import) and the files named on the command line.
    Houdini(&'a Path, Option<u32>, &'a HoudiniFiles),
}

/// Builds the rigid source: imports the glTF and samples its node-carried meshes at `fps`, reads
/// the mesh sequence and detects its rigid pieces (printing the fit's largest residual), imports
/// the Houdini bake, or regenerates the built-in source.
fn load_rigid(
    input: &RigidInput<'_>,
    fps: f32,
    max_memory: u64,
    resource_root: Option<&Path>,
) -> Result<RigidSource> {
    match *input {
        RigidInput::Sequence(dir, fps) => {
            let options = vat_bake::sequence::SequenceOptions { fps, max_memory };
            let folder = vat_bake::sequence::SequenceFolder::open(dir, &options)
                .with_context(|| format!("{}: cannot read the mesh sequence", dir.display()))?;
            for note in folder.notes() {
                eprintln!("note: {note}");
            }
            let tolerance = vat_bake::rigid::RIGID_DETECTION_TOLERANCE;
            let (source, residual) = RigidSource::from_folder(&folder, tolerance)
                .with_context(|| format!("{}: cannot bake in the rigid mode", dir.display()))?;
            eprintln!(
                "note: {}: {} frames at {fps} fps (streamed from the files); {} rigid pieces detected, largest \
                 fit residual {:.5} mm (tolerance {:.3} mm)",
                dir.display(),
                folder.files().len(),
                source.pieces.len(),
                residual * 1e3,
                f64::from(tolerance) * 1e3
            );
            Ok(source)
        }
        RigidInput::File(path) => {
            let options =
                ImportOptions { skin: None, max_memory, resource_root: resource_root.map(Path::to_path_buf) };
            let rig = gltf_import::import_file(path, &options)?;
            for note in &rig.notes {
                eprintln!("note: {}: {note}", path.display());
            }
            RigidSource::from_rig(&rig, fps)
                .with_context(|| format!("{}: cannot bake in the rigid mode", path.display()))
        }
        RigidInput::Houdini(dir, substeps, files) => {
            use vat_bake::interop::houdini::{self, HoudiniBake, HoudiniOptions};
            let options = HoudiniOptions { max_memory, substeps, files: files.clone(), ..Default::default() };
            match houdini::read_houdini(dir, &options)
                .with_context(|| format!("{}: cannot import the Houdini VAT bake", dir.display()))?
            {
                HoudiniBake::Rigidbody(imported) => {
                    for note in &imported.notes {
                        eprintln!("note: {}: {}", dir.display(), crate::terminal_safe(note));
                    }
                    Ok(imported.source)
                }
                HoudiniBake::Softbody(_) => {
                    bail!(
                        "{}: a Softbody bake has no rigid pieces (import it with vat import-houdini)",
                        dir.display()
                    )
                }
            }
        }
        RigidInput::Procedural(name) => match procgen::rigid_by_name(name) {
            Some(source) => Ok(source),
            None => bail!(
                "no built-in rigid source named {name:?} (built-in: {})",
                procgen::RIGID_SOURCES.join(", ")
            ),
        },
    }
}

/// Where a fluid source comes from.
pub(crate) enum FluidInput<'a> {
    /// A folder of per-frame OBJ files at a frame rate.
    Folder(&'a Path, f32),
    /// A built-in source ([`vat_procgen::FLUID_SOURCES`]).
    Procedural(&'a str),
    /// A SideFX Labs VAT 3 dynamic-mesh bake folder, with the files named on the command line.
    Houdini(&'a Path, &'a HoudiniFiles),
}

/// Opens the fluid source: lists the folder's frames (read later, one at a time), imports the
/// Houdini bake or builds the built-in source.
fn load_fluid(input: &FluidInput<'_>, max_memory: u64) -> Result<Box<dyn FluidFrames>> {
    match *input {
        FluidInput::Folder(dir, fps) => Ok(Box::new(
            FluidFolder::open(dir, fps, max_memory)
                .with_context(|| format!("{}: cannot read the fluid sequence", dir.display()))?,
        )),
        FluidInput::Houdini(dir, files) => {
            use vat_bake::interop::houdini::{HoudiniOptions, read_houdini_dynamic_mesh};
            let options = HoudiniOptions { max_memory, files: files.clone(), ..Default::default() };
            Ok(Box::new(
                read_houdini_dynamic_mesh(dir, &options)
                    .with_context(|| format!("{}: cannot import the Houdini VAT bake", dir.display()))?,
            ))
        }
        FluidInput::Procedural(name) => match procgen::fluid_by_name(name) {
            Some(source) => Ok(Box::new(source)),
            None => bail!(
                "no built-in fluid source named {name:?} (built-in: {})",
                procgen::FLUID_SOURCES.join(", ")
            ),
        },
    }
}

/// Where a sprite source comes from.
pub(crate) enum SpriteInput<'a> {
    /// A folder of per-frame CSV or PLY particle files at a frame rate.
    Folder(&'a Path, f32),
    /// A built-in source ([`vat_procgen::SPRITE_SOURCES`]).
    Procedural(&'a str),
    /// A SideFX Labs VAT 3 particle bake folder, with the files named on the command line and the
    /// card edge at scale 1 (metres).
    Houdini(&'a Path, &'a HoudiniFiles, f32),
}

/// Opens the sprite source: lists the folder's frames (read later, one at a time), imports the
/// Houdini bake or builds the built-in source.
fn load_sprite(input: &SpriteInput<'_>, max_memory: u64) -> Result<Box<dyn SpriteFrames>> {
    match *input {
        SpriteInput::Folder(dir, fps) => Ok(Box::new(
            SpriteFolder::open(dir, fps, max_memory)
                .with_context(|| format!("{}: cannot read the particle sequence", dir.display()))?,
        )),
        SpriteInput::Houdini(dir, files, particle_size) => {
            use vat_bake::interop::houdini::{HoudiniOptions, read_houdini_particles};
            let options =
                HoudiniOptions { max_memory, files: files.clone(), particle_size, ..Default::default() };
            Ok(Box::new(
                read_houdini_particles(dir, &options)
                    .with_context(|| format!("{}: cannot import the Houdini VAT bake", dir.display()))?,
            ))
        }
        SpriteInput::Procedural(name) => match procgen::sprite_by_name(name) {
            Some(source) => Ok(Box::new(source)),
            None => bail!(
                "no built-in sprite source named {name:?} (built-in: {})",
                procgen::SPRITE_SOURCES.join(", ")
            ),
        },
    }
}
