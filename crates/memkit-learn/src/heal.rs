//! Call-graph healing from observations: functions changed together in one piece of work are
//! evidence that one calls the other. A pair named together confirms an edge the graph has,
//! or adds one (source `observation`) when the parser saw none; such an edge that no later
//! observation confirms fades. Edges the parser found are refreshed by mem-ast, not here.

/// What a confirmation adds to an edge's confidence (at most 1.0).
pub const CONFIRM: f64 = 0.15;
/// The confidence of an edge added from an observation.
pub const ADDED: f64 = 0.6;
/// Sessions an observation edge may go unconfirmed before it fades.
pub const GRACE_SESSIONS: i64 = 10;
/// What it loses per session after that.
pub const DECAY: f64 = 0.05;
/// An observation naming more functions than this changed too much at once for its pairs to
/// mean calls.
pub const MAX_NAMED: usize = 6;

/// An edge of the graph as healing sees it.
#[derive(Debug, Clone)]
pub struct Edge {
    pub id: i64,
    pub caller: String,
    pub callee: String,
    /// The resolved target (a qualified name, possibly with its module).
    pub target: String,
}

impl Edge {
    fn points_to(&self, name: &str) -> bool {
        self.target == name || self.callee == name || self.target.ends_with(&format!(".{name}"))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Heal {
    Confirm { edge: i64 },
    Add { caller: String, callee: String },
}

/// The changes an observation's `functions_changed` makes: every pair of names that are both
/// `known` functions of the project confirms the edges between them (either way), or adds
/// one from the first named to the second when there is none.
pub fn plan(names: &[String], known: &dyn Fn(&str) -> bool, edges: &[Edge]) -> Vec<Heal> {
    let mut names: Vec<&String> = names.iter().filter(|n| known(n)).collect();
    names.dedup();
    let mut out = Vec::new();
    if names.len() < 2 || names.len() > MAX_NAMED {
        return out;
    }
    for (i, a) in names.iter().enumerate() {
        for b in &names[i + 1..] {
            let between: Vec<i64> = edges
                .iter()
                .filter(|e| {
                    (e.caller == **a && e.points_to(b)) || (e.caller == **b && e.points_to(a))
                })
                .map(|e| e.id)
                .collect();
            if between.is_empty() {
                out.push(Heal::Add {
                    caller: a.to_string(),
                    callee: b.to_string(),
                });
            }
            for edge in between {
                if !out.contains(&Heal::Confirm { edge }) {
                    out.push(Heal::Confirm { edge });
                }
            }
        }
    }
    out
}

/// A confirmed edge's confidence.
pub fn confirmed(c: f64) -> f64 {
    (c + CONFIRM).min(1.0)
}

/// An observation edge's confidence after `sessions` of its project went by without confirming
/// it, from `base`, what it had when last confirmed or added (computed from the base, so a
/// second run over the same sessions takes nothing more off).
pub fn decayed(base: f64, sessions: i64) -> f64 {
    let late = (sessions - GRACE_SESSIONS).max(0) as f64;
    ((base - DECAY * late).max(0.0) * 10_000.0).round() / 10_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(id: i64, caller: &str, target: &str) -> Edge {
        Edge {
            id,
            caller: caller.into(),
            callee: target.rsplit('.').next().unwrap().into(),
            target: target.into(),
        }
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn pairs_confirm_edges_either_way_or_add_one() {
        let known = |n: &str| n != "print_report";
        let edges = [
            edge(1, "AuthService.login", "AuthService.check_password"),
            edge(2, "handler", "app.auth.AuthService.login"),
        ];
        let got = plan(
            &names(&[
                "AuthService.login",
                "AuthService.check_password",
                "handler",
                "print_report",
            ]),
            &known,
            &edges,
        );
        assert_eq!(
            got,
            [
                Heal::Confirm { edge: 1 },
                Heal::Confirm { edge: 2 },
                Heal::Add {
                    caller: "AuthService.check_password".into(),
                    callee: "handler".into()
                },
            ]
        );
    }

    #[test]
    fn one_name_or_too_many_heal_nothing() {
        let known = |_: &str| true;
        assert!(plan(&names(&["a"]), &known, &[]).is_empty());
        let many: Vec<String> = (0..=MAX_NAMED).map(|i| format!("f{i}")).collect();
        assert!(plan(&many, &known, &[]).is_empty());
    }

    #[test]
    fn observation_edges_fade_after_ten_unconfirmed_sessions() {
        assert_eq!(confirmed(0.6), 0.75);
        assert_eq!(confirmed(0.95), 1.0);
        assert_eq!(decayed(0.6, 0), 0.6);
        assert_eq!(decayed(0.6, 10), 0.6);
        assert_eq!(decayed(0.6, 11), 0.55);
        assert_eq!(decayed(0.6, 14), 0.4);
        assert_eq!(decayed(0.6, 40), 0.0);
    }
}
