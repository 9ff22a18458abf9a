//! Finding an OpenVAT bake's files in a folder.

use super::*;

/// Where the files of an OpenVAT bake are.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenVatFiles {
    /// The base name `N`.
    pub name: String,
    /// The sidecar.
    pub sidecar: PathBuf,
    /// `<N>_vat.exr|png` (or `<N>_packed_vat`, or the texture `--texture` names).
    pub texture: PathBuf,
    /// `<N>_vnrm.exr|png`, when present.
    pub normals: Option<PathBuf>,
    /// The mesh.
    pub mesh: PathBuf,
    /// How the files were found where it is not by their plain names (one line for the notes).
    pub mesh_note: Option<String>,
}

/// The entries of `dir` whose lower-cased name satisfies `pred`, sorted.
pub(super) fn files_with(dir: &Path, pred: impl Fn(&str) -> bool) -> Result<Vec<PathBuf>> {
    let io = |e| BakeError::Io { path: dir.to_path_buf(), source: e };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name().to_string_lossy().to_lowercase();
        // Whatever the entry is: the read gate then says what is wrong with one that is not a
        // regular file inside the folder.
        if pred(&name) {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

pub(crate) fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The folders discovery searches: `dir`, then its direct subfolders in name order (OpenVAT's own
/// tutorial bake keeps its mesh in `mesh/` and its packed texture and sidecar in `packed/`). Links
/// to folders are not followed.
pub(crate) fn search_folders(dir: &Path) -> Result<Vec<PathBuf>> {
    let io = |e| BakeError::Io { path: dir.to_path_buf(), source: e };
    let mut subs = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        if entry.file_type().map_err(io)?.is_dir() {
            subs.push(entry.path());
        }
    }
    subs.sort();
    let mut out = vec![dir.to_path_buf()];
    out.extend(subs);
    Ok(out)
}

/// Every file of `folders` whose lower-cased name satisfies `pred`, folder by folder.
pub(crate) fn find_all(folders: &[PathBuf], pred: &dyn Fn(&str) -> bool) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for f in folders {
        out.extend(files_with(f, pred)?);
    }
    Ok(out)
}

/// The first of `names` (in their order, each looked for in every folder in turn) that exists,
/// compared without case.
pub(crate) fn find_named(folders: &[PathBuf], names: &[String]) -> Result<Option<PathBuf>> {
    for name in names {
        let lower = name.to_lowercase();
        if let Some(p) = find_all(folders, &|n| n == lower)?.into_iter().next() {
            return Ok(Some(p));
        }
    }
    Ok(None)
}

/// `path` relative to `dir` when it lies in it, for messages.
pub(crate) fn shown(dir: &Path, path: &Path) -> String {
    path.strip_prefix(dir).map_or_else(|_| path.display().to_string(), |p| p.display().to_string())
}

/// `paths` relative to `dir`, comma-separated.
pub(crate) fn listed(dir: &Path, paths: &[PathBuf]) -> String {
    paths.iter().map(|p| shown(dir, p)).collect::<Vec<_>>().join(", ")
}

/// The texture suffixes of OpenVAT's position textures, lower case, most specific first.
pub(super) const POSITION_SUFFIXES: [&str; 4] =
    ["_packed_vat.exr", "_packed_vat.png", "_vat.exr", "_vat.png"];

/// `N` of a texture named `<N>_vat.<ext>` or `<N>_packed_vat.<ext>`.
pub(super) fn base_of_texture(name: &str) -> Option<String> {
    let lower = name.to_lowercase();
    POSITION_SUFFIXES.iter().find(|s| lower.ends_with(*s)).map(|s| name[..name.len() - s.len()].to_owned())
}

/// Whether a position texture is named as OpenVAT names a texture that packs its normals.
pub(crate) fn named_packed(texture: &Path) -> bool {
    file_name(texture).to_lowercase().contains("_packed_vat.")
}

/// Finds a bake's files in `dir` and its direct subfolders, by OpenVAT's naming: the sidecar
/// `<N>-remap_info.json`; the position texture `<N>_vat.exr|png`, else `<N>_packed_vat.exr|png`
/// (normals packed in its lower half), else the only `*_vat.exr|png`; separate normals
/// `<N>_vnrm.<ext>`, else the only `*_vnrm.<ext>`; the mesh `<N>.glb|gltf`, else
/// `M_<N>_glTF_yUp.glb` or another `M_<N>*` / `<N>_mesh*` glTF (OpenVAT's export names), else the
/// only glTF. Each option of [`OpenVatOptions`] names its file instead.
///
/// # Errors
/// [`BakeError::Interop`] naming what is missing or ambiguous, what was looked for and the option
/// that names the file.
pub fn locate(dir: &Path, options: &OpenVatOptions) -> Result<OpenVatFiles> {
    if !dir.is_dir() {
        return Err(bad(dir, "the bake", "is not a folder (give the folder holding the OpenVAT files)"));
    }
    let folders = search_folders(dir)?;
    let mut notes: Vec<String> = Vec::new();
    let sidecar = match &options.sidecar {
        Some(s) => s.clone(),
        None => {
            let found = find_all(&folders, &|n| n.ends_with(SIDECAR_SUFFIX))?;
            match found.as_slice() {
                [one] => one.clone(),
                [] => {
                    return Err(bad(
                        dir,
                        "the sidecar",
                        format!(
                            "is missing: looked for *{SIDECAR_SUFFIX} in the folder and its subfolders and found none \
                             (is it an OpenVAT bake? name the sidecar with --json)"
                        ),
                    ));
                }
                many => {
                    return Err(bad(
                        dir,
                        "the sidecar",
                        format!(
                            "is ambiguous: {} *{SIDECAR_SUFFIX} files ({}); choose one with --json",
                            many.len(),
                            listed(dir, many)
                        ),
                    ));
                }
            }
        }
    };
    // The sidecar's folder is searched first for the other files.
    let first: Vec<PathBuf> =
        sidecar.parent().filter(|p| p.is_dir()).map(Path::to_path_buf).into_iter().collect();
    let folders: Vec<PathBuf> =
        first.iter().cloned().chain(folders.into_iter().filter(|f| !first.contains(f))).collect();
    let side_name = file_name(&sidecar);
    let given_base = options.texture.as_deref().and_then(|t| base_of_texture(&file_name(t)));
    let name = match (side_name.strip_suffix(SIDECAR_SUFFIX), given_base) {
        (Some(n), _) => n.to_owned(),
        (None, Some(n)) => n,
        (None, None) => {
            // A renamed sidecar: the base name is the one position texture's.
            let found = find_all(&folders, &|n| {
                POSITION_SUFFIXES.iter().any(|s| n.ends_with(s)) && !n.contains("_vnrm")
            })?;
            match found.as_slice() {
                [one] => base_of_texture(&file_name(one)).unwrap_or_default(),
                _ => {
                    return Err(bad(
                        &sidecar,
                        "the sidecar",
                        format!(
                            "is not named <N>{SIDECAR_SUFFIX} and the folder has {} *_vat textures ({}), so its bake \
                             is unknown: name the position texture with --texture",
                            found.len(),
                            listed(dir, &found)
                        ),
                    ));
                }
            }
        }
    };
    let texture = match &options.texture {
        Some(t) => t.clone(),
        None => {
            let plain = [
                format!("{name}_vat.exr"),
                format!("{name}_vat.png"),
                format!("{name}_packed_vat.exr"),
                format!("{name}_packed_vat.png"),
            ];
            match find_named(&folders, &plain)? {
                Some(t) => t,
                None => {
                    let any = find_all(&folders, &|n| POSITION_SUFFIXES.iter().any(|s| n.ends_with(s)))?;
                    match any.as_slice() {
                        [one] => {
                            notes.push(format!(
                                "the position texture is {} (the only *_vat texture; {name}_vat.exr is not there)",
                                shown(dir, one)
                            ));
                            one.clone()
                        }
                        _ => {
                            return Err(bad(
                                &dir.join(format!("{name}_vat.exr")),
                                "the position texture",
                                format!(
                                    "is missing: looked for {}, then the only *_vat.exr|png, in the folder and its \
                                     subfolders, and found {}; name it with --texture",
                                    plain.join(", "),
                                    if any.is_empty() {
                                        "no texture".to_owned()
                                    } else {
                                        format!("{} ({})", any.len(), listed(dir, &any))
                                    }
                                ),
                            ));
                        }
                    }
                }
            }
        }
    };
    let ext = texture.extension().and_then(|e| e.to_str()).unwrap_or("exr").to_lowercase();
    let normals = match &options.normal_texture {
        Some(n) => Some(n.clone()),
        None => match find_named(&folders, &[format!("{name}_vnrm.{ext}")])? {
            Some(n) => Some(n),
            None => {
                let suffix = format!("_vnrm.{ext}");
                let any = find_all(&folders, &|n| n.ends_with(&suffix))?;
                match any.as_slice() {
                    [] => None,
                    [one] => {
                        notes.push(format!(
                            "the normal texture is {} (the only *_vnrm texture; {name}_vnrm.{ext} is not there)",
                            shown(dir, one)
                        ));
                        Some(one.clone())
                    }
                    many => {
                        return Err(bad(
                            &dir.join(format!("{name}_vnrm.{ext}")),
                            "the normal texture",
                            format!(
                                "is ambiguous: {name}_vnrm.{ext} is not there and {} *_vnrm textures are ({}); name one \
                                 with --normal-texture",
                                many.len(),
                                listed(dir, many)
                            ),
                        ));
                    }
                }
            }
        },
    };
    let mesh = match &options.mesh {
        Some(m) => m.clone(),
        None => locate_mesh(dir, &folders, &name, &mut notes)?,
    };
    let mesh_note = (!notes.is_empty()).then(|| notes.join("; "));
    Ok(OpenVatFiles { name, sidecar, texture, normals, mesh, mesh_note })
}

/// The mesh of bake `name` (see [`locate`]); a line in `notes` when it is not `<N>.glb|gltf`.
pub(super) fn locate_mesh(
    dir: &Path,
    folders: &[PathBuf],
    name: &str,
    notes: &mut Vec<String>,
) -> Result<PathBuf> {
    let is_gltf = |n: &str| n.ends_with(".glb") || n.ends_with(".gltf");
    if let Some(m) = find_named(folders, &[format!("{name}.glb"), format!("{name}.gltf")])? {
        return Ok(m);
    }
    let lower = name.to_lowercase();
    let (m_prefix, mesh_prefix) = (format!("m_{lower}"), format!("{lower}_mesh"));
    let named =
        find_all(folders, &|n| is_gltf(n) && (n.starts_with(&m_prefix) || n.starts_with(&mesh_prefix)))?;
    // OpenVAT's export names: M_<N>_glTF_yUp.glb first.
    let yup = format!("m_{lower}_gltf_yup.");
    let pick =
        named.iter().find(|p| file_name(p).to_lowercase().starts_with(&yup)).or(match named.as_slice() {
            [one] => Some(one),
            _ => None,
        });
    if let Some(m) = pick {
        notes.push(format!("the mesh is {} (OpenVAT's export name for {name})", shown(dir, m)));
        return Ok(m.clone());
    }
    let gltfs = find_all(folders, &|n| is_gltf(n))?;
    let looked =
        format!("{name}.glb, {name}.gltf, M_{name}_glTF_yUp.glb, M_{name}*.glb|gltf, {name}_mesh*.glb|gltf");
    if let [one] = gltfs.as_slice() {
        notes.push(format!(
            "the mesh is {} (the folder's only glTF; {name}.glb is not there)",
            shown(dir, one)
        ));
        return Ok(one.clone());
    }
    let fbx = find_all(folders, &|n| n.ends_with(".fbx"))?;
    let problem = if !gltfs.is_empty() {
        format!(
            "is ambiguous: looked for {looked} in the folder and its subfolders, found none of them and {} other glTF files \
             ({}); choose one with --mesh",
            gltfs.len(),
            listed(dir, &gltfs)
        )
    } else if !fbx.is_empty() {
        format!(
            "is missing: looked for {looked} and found only FBX ({}), which vat does not read: convert it to {name}.glb \
             (Blender: File > Export > glTF 2.0, +Y up, keeping UVMap 2 as TEXCOORD_1) or name a glTF with --mesh",
            listed(dir, &fbx)
        )
    } else {
        format!(
            "is missing: looked for {looked} in the folder and its subfolders and found no glTF; name it with --mesh"
        )
    };
    Err(bad(&dir.join(format!("{name}.glb")), "the mesh", problem))
}
