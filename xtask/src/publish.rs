//! The published crates' steps: each checked with no features and with each feature alone,
//! and both packaged by `cargo publish --dry-run`.

use std::env;
use std::path::PathBuf;

use crate::steps::{DynError, cargo_without_warnings, project_root, say, section};

/// The crates published to crates.io, each with its manifest.
const PUBLISHED: &[(&str, &str)] =
    &[("failnext", "failnext/Cargo.toml"), ("failnext-blocklag", "failnext-blocklag/Cargo.toml")];

/// Each published crate's library checked with no features, then with each feature of its
/// manifest alone, so that no feature leans on another one's code or dependencies. Warnings
/// fail the step: they are read from cargo's output rather than turned into errors with
/// `RUSTFLAGS`, which would rebuild every dependency and leave the cache of the other steps.
pub(crate) fn features() -> Result<(), DynError> {
    section("features (none, then each alone)", || {
        for (krate, manifest) in PUBLISHED {
            let text = std::fs::read_to_string(project_root().join(manifest))?;
            let features = manifest_features(&text);
            let mut combinations = vec![None];
            combinations.extend(features.iter().map(|f| Some(f.as_str())));
            for feature in combinations {
                let mut args = vec!["check", "--quiet", "--lib", "-p", krate, "--no-default-features"];
                if let Some(feature) = feature {
                    args.extend(["--features", feature]);
                }
                cargo_without_warnings(&args)?;
                say(&format!("  {krate}: {} ok", feature.unwrap_or("no features")));
            }
        }
        Ok(())
    })
}

/// The features a manifest declares in its `[features]` table, `default` left out.
fn manifest_features(manifest: &str) -> Vec<String> {
    let mut in_features = false;
    let mut features = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_features = line == "[features]";
        } else if in_features && !line.starts_with('#') {
            if let Some((name, _)) = line.split_once('=') {
                let name = name.trim();
                if name != "default" {
                    features.push(name.to_owned());
                }
            }
        }
    }
    features
}

/// Both published crates as crates.io would receive them: packaged, the package built on its
/// own (failnext-blocklag against the failnext being packaged), nothing uploaded. Asks the
/// crates.io index, so it needs the network. Uncommitted changes are packaged as they are
/// (`--allow-dirty`), as every other step checks the working tree.
pub(crate) fn publish_dry_run() -> Result<(), DynError> {
    section("publish (dry run)", || {
        forget_unpublished_sources()?;
        // A target dir of its own, where the packaged crates' builds are forgotten before each
        // run (cargo takes a registry crate's build as final too).
        let target = publish_target()?;
        let target = target.to_str().ok_or("the target path is not UTF-8")?.to_owned();
        let mut args = vec!["publish", "--dry-run", "--allow-dirty", "--quiet", "--target-dir", &target];
        for (krate, _) in PUBLISHED {
            args.extend(["-p", krate]);
        }
        cargo_without_warnings(&args)
    })
}

/// Removes the copies of the published crates that an earlier dry run unpacked into cargo's
/// registry sources. The dry run verifies failnext-blocklag against the failnext it has just
/// packaged, through a local registry under the same name and version as the real one, and
/// cargo takes an unpacked registry crate as immutable: a copy left by an earlier run, of the
/// same version but older code, would be built instead of this one.
fn forget_unpublished_sources() -> Result<(), DynError> {
    let home = match env::var_os("CARGO_HOME") {
        Some(home) => PathBuf::from(home),
        None => {
            PathBuf::from(env::var_os("HOME").ok_or("neither CARGO_HOME nor HOME is set")?).join(".cargo")
        }
    };
    let Ok(registries) = std::fs::read_dir(home.join("registry").join("src")) else { return Ok(()) };
    let mut names = Vec::new();
    for (krate, manifest) in PUBLISHED {
        let text = std::fs::read_to_string(project_root().join(manifest))?;
        let version = manifest_version(&text).ok_or_else(|| format!("{manifest} has no version"))?;
        names.push(format!("{krate}-{version}"));
    }
    for registry in registries.flatten() {
        for name in &names {
            let unpacked = registry.path().join(name);
            if unpacked.is_dir() {
                std::fs::remove_dir_all(&unpacked)?;
            }
        }
    }
    Ok(())
}

/// The dry run's own target dir, without the builds of the crates it packages: the
/// dependencies stay built, the packaged crates are built again from what was just packaged.
fn publish_target() -> Result<PathBuf, DynError> {
    let target = match env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => project_root().join("target"),
    }
    .join("publish");
    for dir in ["debug/.fingerprint", "debug/deps"] {
        let Ok(entries) = std::fs::read_dir(target.join(dir)) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let ours = PUBLISHED.iter().any(|(krate, _)| {
                let stem = krate.replace('-', "_");
                name.starts_with(&format!("{krate}-"))
                    || name.starts_with(&format!("{stem}-"))
                    || name.starts_with(&format!("lib{stem}-"))
            });
            if ours {
                let path = entry.path();
                if path.is_dir() { std::fs::remove_dir_all(&path)? } else { std::fs::remove_file(&path)? }
            }
        }
    }
    Ok(target)
}

/// The `version` of a manifest's `[package]`.
fn manifest_version(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if let Some(value) = line.strip_prefix("version").filter(|_| in_package) {
            if let Some(value) = value.trim_start().strip_prefix('=') {
                return Some(value.trim().trim_matches('"').to_owned());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_features_lists_the_features_table_without_default() {
        let manifest = "[package]\nname = \"x\"\n\n[features]\ndefault = []\n## A doc comment.\n\
                        tracing = [\"dep:tracing\"]\nalloy = [\"jsonrpc\", \"dep:a\"]\n\n\
                        [dependencies]\nserde = \"1\"\n";
        assert_eq!(manifest_features(manifest), ["tracing", "alloy"]);
    }

    #[test]
    fn manifest_version_is_the_packages_own() {
        let manifest = "[package]\nname = \"x\"\nversion = \"0.2.0\"\n\n[dependencies]\nversion = \"9\"\n";
        assert_eq!(manifest_version(manifest).as_deref(), Some("0.2.0"));
        assert_eq!(manifest_version("[dependencies]\nversion = \"1\"\n"), None);
    }

    #[test]
    fn every_published_manifest_declares_features() {
        for (krate, manifest) in PUBLISHED {
            let text = std::fs::read_to_string(project_root().join(manifest)).unwrap_or_default();
            assert!(!manifest_features(&text).is_empty(), "{krate}: no features found in {manifest}");
        }
    }
}
