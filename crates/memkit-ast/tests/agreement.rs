//! mem-ast's definitions against Python's own `ast` module over real code: the standard library
//! of the test Python ($MEMKIT_TEST_PYTHON, set by scripts/test) and the packages of
//! scripts/fetch-pycorpus ($MEMKIT_TEST_PYCORPUS). Every file's definitions (qualified name, kind,
//! first and last line) must be equal, and the files Python refuses must be the files mem-ast
//! reports a parse error for.

use std::process::Command;

use serde_json::Value;

#[test]
fn definitions_equal_pythons_ast_on_real_code() {
    let py = std::env::var("MEMKIT_TEST_PYTHON").expect(
        "MEMKIT_TEST_PYTHON is not set: run scripts/test (it creates the venv), or set it to a python3",
    );
    let stdlib = Command::new(&py)
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['stdlib'])",
        ])
        .output()
        .expect("run the test python");
    let mut roots = vec![String::from_utf8(stdlib.stdout).unwrap().trim().to_string()];
    if let Ok(extra) = std::env::var("MEMKIT_TEST_PYCORPUS") {
        roots.push(format!("{extra}/src"));
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference_defs.py");
    let out = Command::new(&py).arg(script).args(&roots).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (mut files, mut defs, mut errors) = (0, 0, 0);
    let mut mismatches = Vec::new();
    // Files in legacy encodings (koi8-r, iso-8859-5…) that mem-ast names instead of decoding.
    let mut unsupported = Vec::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let rec: Value = serde_json::from_str(line).unwrap();
        let path = rec["path"].as_str().unwrap();
        let bytes = std::fs::read(path).unwrap();
        let snap = memkit_ast::snapshot(path, &bytes);
        files += 1;
        match (&rec["error"], &snap.parse_error) {
            (Value::String(_), Some(_)) => errors += 1,
            (Value::String(e), None) => {
                mismatches.push(format!("{path}: Python refuses it ({e}), mem-ast does not"))
            }
            (_, Some(e)) if e.ends_with("is not supported") => unsupported.push(path.to_string()),
            (_, Some(e)) => {
                mismatches.push(format!("{path}: mem-ast refuses it ({e}), Python does not"))
            }
            (_, None) => {
                let want: Vec<(String, String, u64, u64)> = rec["defs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| {
                        (
                            d[0].as_str().unwrap().to_string(),
                            d[1].as_str().unwrap().to_string(),
                            d[2].as_u64().unwrap(),
                            d[3].as_u64().unwrap(),
                        )
                    })
                    .collect();
                let got: Vec<(String, String, u64, u64)> = snap
                    .functions
                    .iter()
                    .map(|f| {
                        (
                            f.qualname.clone(),
                            f.kind.as_str().to_string(),
                            f.line_start as u64,
                            f.line_end as u64,
                        )
                    })
                    .collect();
                defs += want.len();
                if want != got {
                    let first = want
                        .iter()
                        .zip(&got)
                        .find(|(w, g)| w != g)
                        .map(|(w, g)| format!("python {w:?}, mem-ast {g:?}"))
                        .unwrap_or_else(|| {
                            format!("python {} defs, mem-ast {}", want.len(), got.len())
                        });
                    mismatches.push(format!("{path}: {first}"));
                }
            }
        }
    }
    eprintln!(
        "agreement: {files} files, {defs} definitions, {errors} files refused by both, {} files in an unsupported encoding, {} mismatching files",
        unsupported.len(),
        mismatches.len()
    );
    assert!(files > 1000, "the corpus is too small: {files} files");
    assert!(unsupported.len() < 10, "{unsupported:?}");
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
