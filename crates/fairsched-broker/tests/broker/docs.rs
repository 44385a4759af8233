//! Every Rust block of the docs is compiled by a test: docs/extending.md's
//! stand-alone blocks as doc-tests of this crate (`src/lib.rs` includes
//! the page), and the outlines it marks `ignore` (bodies elided) are listed
//! here with why, each line found in the compiled file it outlines. Its
//! `Cargo.toml` snippet names this workspace's crates at the paths it says.

use std::fs;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The outlines (`rust ignore`): their first line, the compiled file they
/// are a part of (every line of the outline is found in it), and why they
/// are not compiled on their own.
const OUTLINES: &[(&str, Option<&str>, &str)] = &[
    (
        "#[derive(Clone, Default, Serialize, Deserialize)]",
        Some("examples/custom_policy.rs"),
        "the policy's outline, bodies elided; the example (built and run by \
         crates/fairsched/tests/cli/examples.rs) has them",
    ),
    (
        "let registry = Registry::builtin()",
        Some("examples/custom_policy.rs"),
        "registers the outlined policies, which it needs to compile; as the example does",
    ),
    (
        "let seen = Arc::new(AtomicUsize::new(0));",
        None,
        "a sketch of Ctor::shared_order around a policy type of yours (Lifo); \
         crates/fairsched-sim/tests/sim/out_of_tree.rs builds one the same way",
    ),
];

/// The ```rust blocks of a Markdown text: (info string, code).
fn rust_blocks(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        if let Some(info) = l.strip_prefix("```rust") {
            let code: Vec<&str> = lines.by_ref().take_while(|l| !l.starts_with("```")).collect();
            out.push((info.trim().to_owned(), code.join("\n")));
        }
    }
    out
}

#[test]
fn every_rust_block_of_the_docs_is_compiled_or_a_listed_outline() {
    let lib = fs::read_to_string(repo().join("crates/fairsched-broker/src/lib.rs")).unwrap();
    let mut skipped = Vec::new();
    let mut compiled = 0;
    let mut docs: Vec<PathBuf> = fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.push(repo().join("README.md"));
    for doc in docs {
        let name = doc.strip_prefix(repo()).unwrap().display().to_string();
        for (info, code) in rust_blocks(&fs::read_to_string(&doc).unwrap()) {
            let first = code.lines().next().unwrap_or("").trim();
            let attrs: Vec<&str> = info.split([',', ' ']).filter(|a| !a.is_empty()).collect();
            if attrs.contains(&"ignore") {
                let Some((_, source, why)) = OUTLINES.iter().find(|(f, _, _)| *f == first) else {
                    panic!("{name}: a block marked ignore that OUTLINES does not list: {first}");
                };
                if let Some(source) = source {
                    outline_is_part_of(&code, &repo().join(source), &name);
                }
                skipped.push(format!("{name}: `{first}`: {why}"));
                continue;
            }
            // Compiled as a doc-test: the page is included where doc-tests
            // run.
            assert!(
                lib.contains(&format!("include_str!(\"../../../{name}\")")),
                "{name} has a Rust block, but no crate compiles it as a doc-test: {first}"
            );
            compiled += 1;
        }
    }
    assert!(compiled >= 4, "{compiled} blocks compiled");
    assert_eq!(
        skipped.len(),
        OUTLINES.len(),
        "an outline of OUTLINES is no longer in the docs"
    );
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!(
            "docs: {compiled} Rust blocks compiled as doc-tests (cargo test -p fairsched-broker --doc); \
             {} outlines not compiled alone:\n  {}\n",
            skipped.len(),
            skipped.join("\n  ")
        )
        .as_bytes(),
    );
}

/// Every line of `outline` (its comments and `/* … */` elisions cut, a
/// leading `let NAME = ` dropped) is found in a line of `source`.
fn outline_is_part_of(outline: &str, source: &Path, doc: &str) {
    let text = fs::read_to_string(source).unwrap();
    for line in outline.lines() {
        let mut l = line
            .split("//")
            .next()
            .unwrap()
            .split("/*")
            .next()
            .unwrap()
            .trim();
        if let Some(rest) = l.strip_prefix("let ").and_then(|r| r.split_once(" = ")) {
            l = rest.1;
        }
        if l.chars().all(|c| !c.is_alphanumeric()) {
            continue;
        }
        assert!(
            text.lines().any(|s| s.contains(l)),
            "{doc}: the outline's line {l:?} is not in {}",
            source.display()
        );
    }
}

/// The page's `Cargo.toml` snippet: path dependencies on crates of this
/// workspace (a clone at `../fairsched`), core and sim at least, and serde
/// with `derive` (snapshot_policy!).
#[test]
fn the_extending_guides_cargo_toml_names_real_crates() {
    let text = fs::read_to_string(repo().join("docs/extending.md")).unwrap();
    let block = text
        .split("```toml\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a ```toml block");
    let mut named = Vec::new();
    for line in block.lines().filter(|l| l.contains('=') && !l.starts_with('[')) {
        let (name, value) = line.split_once(" = ").unwrap();
        let name = name.trim();
        if name == "serde" {
            assert!(value.contains("features = [\"derive\"]"), "{line}");
            named.push(name);
            continue;
        }
        let path = value
            .split("path = \"")
            .nth(1)
            .and_then(|p| p.split('"').next())
            .unwrap_or_else(|| panic!("no path in {line}"));
        let dir = path
            .strip_prefix("../fairsched/")
            .unwrap_or_else(|| panic!("{path}: not in a clone at ../fairsched"));
        let manifest = fs::read_to_string(repo().join(dir).join("Cargo.toml"))
            .unwrap_or_else(|e| panic!("{line}: {dir}/Cargo.toml: {e}"));
        assert!(
            manifest.contains(&format!("name = \"{name}\"")),
            "{line}: {dir} is not the package {name}"
        );
        named.push(name);
    }
    for want in ["fairsched-core", "fairsched-sim", "serde"] {
        assert!(named.contains(&want), "{want} missing from:\n{block}");
    }
}
