//! `cargo xtask docs`: the documentation's own checks.
//!
//! - Every relative link and image of the Markdown files (README.md, the other top-level `.md` files,
//!   `vat-bevy/README.md` and everything under `docs/`) points at a file that exists, and a
//!   `#fragment` at a heading of the file it names (GitHub's and mdBook's heading ids: lower case,
//!   letters, digits, `-` and `_` kept, spaces to `-`, the rest dropped; repeats get `-1`, `-2`, ...).
//!   Links inside code blocks and code spans are not links and are skipped; `http(s):` and `mailto:`
//!   links are not fetched (CI has no network beyond the package registries).
//! - Every chapter under `docs/guide/src` is listed in its `SUMMARY.md` (no page the book leaves out).
//! - A code block that follows `<!-- excerpt: PATH -->` is an excerpt of that file (relative to the
//!   Markdown file): each of its lines, trimmed, is a line of PATH (lines `// ...` mark elisions),
//!   so an example shown in the docs is one that compiles and runs (its file is built by the tests).
//! - README.md stays a front page: at most [`README_MAX_LINES`] lines; the rest is the guide's.
//! - The guide builds with mdBook ([`MDBOOK_VERSION`], installed from crates.io when `mdbook` is
//!   missing) into `docs/guide/book` (ignored by git).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The README's length limit, lines: what vat is, a picture, the two commands, a short embedding
/// example and links. Everything else belongs in the guide.
pub(crate) const README_MAX_LINES: usize = 250;

/// The mdBook release `cargo xtask docs` installs when `mdbook` is missing.
pub(crate) const MDBOOK_VERSION: &str = "0.5.4";

/// Runs every check, then builds the guide.
pub(crate) fn docs(root: &Path) -> Result<()> {
    let problems = check_links_and_summary(root)?;
    if !problems.is_empty() {
        for p in &problems {
            eprintln!("xtask docs: {p}");
        }
        bail!("{} documentation problem(s), listed above", problems.len());
    }
    eprintln!("xtask docs: links, anchors, the guide's summary and the README's length are fine");
    build_guide(root)
}

/// The link, summary and README-length checks; one line per problem.
pub(crate) fn check_links_and_summary(root: &Path) -> Result<Vec<String>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(root).with_context(|| format!("reading {}", root.display()))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    let bevy_readme = root.join("vat-bevy/README.md");
    if bevy_readme.is_file() {
        files.push(bevy_readme);
    }
    collect_markdown(&root.join("docs"), &mut files)?;
    files.sort();
    let mut headings: HashMap<PathBuf, Vec<String>> = HashMap::new();
    let mut problems = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let shown = file.strip_prefix(root).unwrap_or(file).display().to_string();
        for (line, target) in links(&text) {
            if target.starts_with("http://")
                || target.starts_with("https://")
                || target.starts_with("mailto:")
            {
                continue;
            }
            let (path_part, fragment) = match target.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (target.as_str(), None),
            };
            let resolved = if path_part.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap_or(root).join(path_part)
            };
            if !resolved.exists() {
                problems.push(format!(
                    "{shown}:{line}: link to {target:?}: {} does not exist",
                    resolved.display()
                ));
                continue;
            }
            let Some(fragment) = fragment else { continue };
            if resolved.extension().is_none_or(|e| e != "md") {
                continue;
            }
            let canonical = resolved.canonicalize().unwrap_or(resolved.clone());
            if !headings.contains_key(&canonical) {
                let t = std::fs::read_to_string(&resolved)
                    .with_context(|| format!("reading {}", resolved.display()))?;
                headings.insert(canonical.clone(), heading_ids(&t));
            }
            if !headings[&canonical].iter().any(|id| id == fragment) {
                problems
                    .push(format!("{shown}:{line}: link to {target:?}: no heading with id \"{fragment}\""));
            }
        }
    }
    for file in &files {
        let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let shown = file.strip_prefix(root).unwrap_or(file).display().to_string();
        problems.extend(check_excerpts(&text, file.parent().unwrap_or(root), &shown)?);
    }
    let src = root.join("docs/guide/src");
    if src.is_dir() {
        let summary =
            std::fs::read_to_string(src.join("SUMMARY.md")).context("reading docs/guide/src/SUMMARY.md")?;
        let listed: Vec<String> = links(&summary).into_iter().map(|(_, t)| t).collect();
        let mut chapters = Vec::new();
        collect_markdown(&src, &mut chapters)?;
        for chapter in chapters {
            let relative =
                chapter.strip_prefix(&src).unwrap_or(&chapter).to_string_lossy().replace('\\', "/");
            if relative != "SUMMARY.md" && !listed.contains(&relative) {
                problems.push(format!(
                    "docs/guide/src/{relative}: not listed in SUMMARY.md (the book leaves it out)"
                ));
            }
        }
    }
    let readme = std::fs::read_to_string(root.join("README.md")).context("reading README.md")?;
    let lines = readme.lines().count();
    if lines > README_MAX_LINES {
        problems.push(format!(
            "README.md: {lines} lines, more than {README_MAX_LINES}: move the detail into the guide (docs/guide)"
        ));
    }
    Ok(problems)
}

/// The excerpt problems of `text` (a Markdown file in `dir`, shown as `shown`).
fn check_excerpts(text: &str, dir: &Path, shown: &str) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let Some(path) = lines[i].trim().strip_prefix("<!-- excerpt:").and_then(|r| r.strip_suffix("-->"))
        else {
            i += 1;
            continue;
        };
        let path = path.trim();
        let source_path = dir.join(path);
        let Ok(source) = std::fs::read_to_string(&source_path) else {
            problems.push(format!("{shown}:{}: excerpt of {path}: the file does not exist", i + 1));
            i += 1;
            continue;
        };
        let source_lines: std::collections::HashSet<&str> = source.lines().map(str::trim).collect();
        let Some(open) = (i + 1..lines.len()).find(|&j| lines[j].trim_start().starts_with("```")) else {
            problems.push(format!("{shown}:{}: excerpt of {path}: no code block follows", i + 1));
            break;
        };
        let mut j = open + 1;
        while j < lines.len() && !lines[j].trim_start().starts_with("```") {
            let line = lines[j].trim();
            if !line.is_empty() && !line.starts_with("// ...") && !source_lines.contains(line) {
                problems.push(format!("{shown}:{}: excerpt of {path}: {line:?} is not a line of it", j + 1));
            }
            j += 1;
        }
        i = j + 1;
    }
    Ok(problems)
}

/// Every `.md` file under `dir` (recursively), skipping build output.
fn collect_markdown(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    if !dir.is_dir() {
        return Ok(());
    }
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "book") {
                continue;
            }
            collect_markdown(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
    Ok(())
}

/// The lines of `text` outside fenced code blocks, with code spans blanked, numbered from 1.
fn prose_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (fence, marker) {
            (None, Some(m)) => {
                fence = Some(m);
                continue;
            }
            (Some(open), Some(m)) if open == m => {
                fence = None;
                continue;
            }
            (Some(_), _) => continue,
            (None, None) => {}
        }
        // Code spans: everything between matching backtick runs is not Markdown.
        let mut kept = String::with_capacity(line.len());
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
                kept.push(' ');
            } else {
                kept.push(if in_code { ' ' } else { c });
            }
        }
        out.push((i + 1, kept));
    }
    out
}

/// `(line, target)` of every inline link or image (`[text](target)`, `![alt](target "title")`) and
/// reference definition (`[label]: target`) of `text`.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (line, prose) in prose_lines(text) {
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            let target = after[..end].split_whitespace().next().unwrap_or("");
            let target = target.trim_start_matches('<').trim_end_matches('>');
            if !target.is_empty() {
                out.push((line, target.to_owned()));
            }
            rest = &after[end..];
        }
        let t = prose.trim_start();
        if t.starts_with('[')
            && let Some(close) = t.find("]:")
        {
            let target = t[close + 2..].split_whitespace().next().unwrap_or("");
            if !target.is_empty() {
                out.push((line, target.to_owned()));
            }
        }
    }
    out
}

/// The ids of the headings of `text`, as GitHub and mdBook make them.
fn heading_ids(text: &str) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut ids = Vec::new();
    let mut fence: Option<&str> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(m) = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m)) {
            fence = match fence {
                None => Some(m),
                Some(open) if open == m => None,
                other => other,
            };
            continue;
        }
        if fence.is_some() || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#');
        if !title.starts_with(' ') {
            continue;
        }
        let base = heading_id(title.trim());
        let n = seen.entry(base.clone()).or_insert(0);
        ids.push(if *n == 0 { base.clone() } else { format!("{base}-{n}") });
        *n += 1;
    }
    ids
}

/// One heading's id: lower case; letters, digits, `-` and `_` kept; spaces to `-`; the rest dropped.
fn heading_id(title: &str) -> String {
    title
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .flat_map(char::to_lowercase)
        .collect()
}

/// `mdbook build docs/guide`, installing mdBook first when it is missing.
fn build_guide(root: &Path) -> Result<()> {
    let guide = root.join("docs/guide");
    if !guide.join("book.toml").is_file() {
        return Ok(());
    }
    let present = Command::new("mdbook").arg("--version").output().is_ok_and(|o| o.status.success());
    if !present {
        let mut cmd = crate::cargo();
        cmd.args(["install", "mdbook", "--locked", "--no-default-features", "--version", MDBOOK_VERSION]);
        crate::run(cmd)?;
    }
    let mut cmd = Command::new("mdbook");
    cmd.arg("build").arg(&guide);
    crate::run(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heading_ids_follow_github() {
        let ids = heading_ids(
            "# The `vat` command\n## Interop: OpenVAT (Blender) and Houdini VAT bakes\n```\n# not a heading\n```\n\
             ## Notes\n## Notes\n#nospace\n",
        );
        assert_eq!(
            ids,
            ["the-vat-command", "interop-openvat-blender-and-houdini-vat-bakes", "notes", "notes-1"]
        );
    }

    #[test]
    fn links_skip_code_and_find_images_and_references() {
        let text =
            "See [a](a.md#x) and `[b](b.md)`.\n```\n[c](c.md)\n```\n![img](../i.png \"t\")\n[ref]: r.md\n";
        let found: Vec<String> = links(text).into_iter().map(|(_, t)| t).collect();
        assert_eq!(found, ["a.md#x", "../i.png", "r.md"]);
    }

    #[test]
    fn an_excerpt_must_be_made_of_the_files_lines() {
        let dir = std::env::temp_dir().join(format!("xtask-excerpt-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("ex.rs"), "fn main() {\n    let a = 1;\n    let b = 2;\n}\n").unwrap();
        let good = "<!-- excerpt: ex.rs -->\n```rust\nlet a = 1;\n// ... more\n    let b = 2;\n```\n";
        let bad = "<!-- excerpt: ex.rs -->\n```rust\nlet a = 3;\n```\n<!-- excerpt: none.rs -->\n";
        let good_problems = check_excerpts(good, &dir, "good.md").unwrap();
        let bad_problems = check_excerpts(bad, &dir, "bad.md").unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(good_problems.is_empty(), "{good_problems:?}");
        assert_eq!(bad_problems.len(), 2, "{bad_problems:?}");
        assert!(bad_problems[0].contains("\"let a = 3;\" is not a line of it"));
        assert!(bad_problems[1].contains("none.rs: the file does not exist"));
    }

    #[test]
    fn a_broken_link_and_a_missing_anchor_are_reported() {
        let dir = std::env::temp_dir().join(format!("xtask-docs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("README.md"), "# R\n[ok](B.md#two) [gone](nope.md) [bad](B.md#three)\n")
            .unwrap();
        std::fs::write(dir.join("B.md"), "# One\n## Two\n").unwrap();
        let problems = check_links_and_summary(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("nope.md") && problems[0].contains("does not exist"));
        assert!(problems[1].contains("no heading with id \"three\""));
    }
}
