//! Tests judged one by one: what a parsed test file holds (its units: each
//! test, each helper, the code outside them), each unit's assertions with
//! their strength, and the judgement of a patched file against its base.
//!
//! A unit of the base is matched with the patched unit of the same id. A
//! test unit the patched file no longer has was deleted or renamed away; an
//! assertion of a base unit must be matched by a live assertion of the same
//! unit at least as strong. An assertion that is still written but can no
//! longer run (after a `return`, under `if False:`, inside a `try` whose
//! handler swallows its failure) does not count. Nothing another unit adds
//! offsets what one unit lost.

/// How much an assertion pins down, weakest first. The order of strength,
/// documented in docs/guide/built-in-properties.md:
///
/// exact (equality, raises, a snapshot, an explicit failure, an assertion
/// helper) > comparison (order, containment, type, a negated exact check)
/// > truthiness (truthiness, `None`/defined, length > 0) > a constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    Constant,
    Truthiness,
    Comparison,
    Exact,
}

/// What an assertion checks, as a finding names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Equality,
    Raises,
    Snapshot,
    Fail,
    Helper,
    Comparison,
    Containment,
    Type,
    Truthiness,
    Defined,
    Length,
    Constant,
}

impl Kind {
    pub fn tier(self) -> Tier {
        match self {
            Kind::Equality | Kind::Raises | Kind::Snapshot | Kind::Fail | Kind::Helper => {
                Tier::Exact
            }
            Kind::Comparison | Kind::Containment | Kind::Type => Tier::Comparison,
            Kind::Truthiness | Kind::Defined | Kind::Length => Tier::Truthiness,
            Kind::Constant => Tier::Constant,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Equality => "an exact equality",
            Kind::Raises => "an expected exception",
            Kind::Snapshot => "a snapshot",
            Kind::Fail => "an explicit failure",
            Kind::Helper => "an assertion helper",
            Kind::Comparison => "a comparison",
            Kind::Containment => "a containment check",
            Kind::Type => "a type check",
            Kind::Truthiness => "a truthiness check",
            Kind::Defined => "a not-None/defined check",
            Kind::Length => "a non-empty check",
            Kind::Constant => "a constant",
        }
    }
}

/// One assertion as written.
#[derive(Debug, Clone)]
pub struct Assertion {
    /// Its source, on one line, whitespace collapsed.
    pub text: String,
    /// 1-based line.
    pub line: u32,
    pub kind: Kind,
    /// Why it can never run or never fail, when it cannot.
    pub dead: Option<String>,
    /// The function it calls, for an assertion helper (`assert_ok`): one
    /// the file defines is as strong as its own assertions.
    pub callee: Option<String>,
    /// A plain call to `callee`, an assertion only if the file defines it
    /// with assertions of its own.
    pub plain: bool,
}

/// A test, a helper, or the code outside every function.
#[derive(Debug, Clone)]
pub struct Unit {
    /// `test_x`, `TestX::test_y`, `describe > it`: how the runner names it.
    pub id: String,
    /// Whether the runner collects it as a test.
    pub is_test: bool,
    /// 1-based line of its definition.
    pub line: u32,
    pub asserts: Vec<Assertion>,
    /// What can take a test out of its runner without a marker (`async
    /// def` under unittest, an added decorator, a defaulted parameter): a
    /// key, and what it does. One the base's unit does not have is a
    /// finding.
    pub risks: Vec<(String, String)>,
}

/// What a parsed file holds.
#[derive(Debug, Default)]
pub struct Parsed {
    pub units: Vec<Unit>,
}

impl Parsed {
    fn unit(&self, id: &str) -> Option<&Unit> {
        self.units.iter().find(|u| u.id == id)
    }
}

/// Byte offset to 1-based line.
pub struct Lines(Vec<usize>);

impl Lines {
    pub fn new(src: &str) -> Lines {
        let mut starts = vec![0];
        starts.extend(src.match_indices('\n').map(|(i, _)| i + 1));
        Lines(starts)
    }

    pub fn line(&self, offset: usize) -> u32 {
        (self.0.partition_point(|&s| s <= offset)) as u32
    }
}

/// `src[start..end]` on one line, whitespace collapsed: what assertions
/// are matched by, whole (a cut text would make two differing assertions
/// one).
pub fn snippet(src: &str, start: usize, end: usize) -> String {
    let text = src.get(start..end).unwrap_or_default();
    let mut out = String::new();
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// `text` as a finding shows it: at most 120 characters.
pub fn shown(text: &str) -> String {
    if text.chars().count() > 120 {
        text.chars().take(117).collect::<String>() + "..."
    } else {
        text.to_string()
    }
}

/// Whether `word` occurs in `text` more than once as a whole identifier
/// (its definition and a use).
pub fn used(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    text.match_indices(word)
        .filter(|(i, _)| {
            let before = text[..*i].chars().next_back();
            let after = text[i + word.len()..].chars().next();
            !before.is_some_and(ident) && !after.is_some_and(ident)
        })
        .count()
        > 1
}

/// Assertion helpers the file defines take the strength of their own
/// strongest live assertion (a constant when they have none: `def
/// assert_ok(*a): pass`).
pub fn resolve_helpers(units: &mut [Unit]) {
    let strength: Vec<(String, Kind)> = units
        .iter()
        .filter(|u| !u.is_test)
        .map(|u| {
            let name = u.id.rsplit("::").next().unwrap_or(&u.id).to_string();
            let best = u
                .asserts
                .iter()
                .filter(|a| a.dead.is_none())
                .map(|a| a.kind)
                .max_by_key(|k| k.tier())
                .unwrap_or(Kind::Constant);
            (name, best)
        })
        .collect();
    for u in units.iter_mut() {
        for a in u.asserts.iter_mut() {
            if let Some(callee) = &a.callee
                && let Some((_, k)) = strength.iter().find(|(n, _)| n == callee)
            {
                a.kind = *k;
                if *k != Kind::Constant {
                    a.plain = false;
                }
            }
        }
        u.asserts.retain(|a| !a.plain);
    }
}

/// One finding: the line in the patched file (or none), and the message.
pub type Found = (Option<u32>, String);

fn what(unit: &Unit) -> String {
    if unit.is_test {
        format!("test `{}`", unit.id)
    } else if unit.id.starts_with('<') {
        format!("the code {}", unit.id.trim_matches(['<', '>']))
    } else {
        format!("helper `{}`", unit.id)
    }
}

/// The findings of `patched` against `base`, in the base's order.
pub fn judge(base: &Parsed, patched: &Parsed) -> Vec<Found> {
    let mut found = Vec::new();
    for b in &base.units {
        let Some(p) = patched.unit(&b.id) else {
            if b.is_test {
                found.push((
                    None,
                    format!(
                        "{} (line {} at the base) was deleted or renamed away: the runner no longer collects it{}",
                        what(b),
                        b.line,
                        match b.asserts.iter().find(|a| a.dead.is_none()) {
                            Some(a) => format!(", and its assertions with it (`{}`)", shown(&a.text)),
                            None => String::new(),
                        }
                    ),
                ));
            }
            continue;
        };
        if b.is_test && !p.is_test {
            found.push((
                Some(p.line),
                format!("{} is no longer collected as a test", what(b)),
            ));
            continue;
        }
        if b.is_test {
            for (key, what_it_does) in &p.risks {
                if !b.risks.iter().any(|(k, _)| k == key) {
                    found.push((Some(p.line), format!("{}: {what_it_does}", what(b))));
                }
            }
        }
        found.extend(compare(b, p));
    }
    found
}

/// Each live assertion of `b` against the live ones of `p`: the same text
/// first, then the rest strongest to strongest.
fn compare(b: &Unit, p: &Unit) -> Vec<Found> {
    let mut base: Vec<&Assertion> = b.asserts.iter().filter(|a| a.dead.is_none()).collect();
    let mut now: Vec<&Assertion> = p.asserts.iter().filter(|a| a.dead.is_none()).collect();
    // The same text of the same strength: `pytest.raises(E)` alone is
    // not the `with pytest.raises(E):` it was.
    base.retain(|a| {
        match now
            .iter()
            .position(|x| x.text == a.text && x.kind == a.kind)
        {
            Some(k) => {
                now.remove(k);
                false
            }
            None => true,
        }
    });
    base.sort_by(|x, y| y.kind.tier().cmp(&x.kind.tier()).then(x.line.cmp(&y.line)));
    now.sort_by(|x, y| y.kind.tier().cmp(&x.kind.tier()).then(x.line.cmp(&y.line)));
    let mut found = Vec::new();
    let mut now = now.into_iter();
    for a in base {
        match now.next() {
            Some(n) if n.kind.tier() >= a.kind.tier() => {}
            Some(n) => found.push((
                Some(n.line),
                format!(
                    "{}: assertion `{}` (line {} at the base) was replaced by a weaker one, `{}`: {} is weaker than {}",
                    what(b),
                    shown(&a.text),
                    a.line,
                    shown(&n.text),
                    n.kind.name(),
                    a.kind.name()
                ),
            )),
            None => {
                let dead = p
                    .asserts
                    .iter()
                    .find(|x| x.text == a.text && x.dead.is_some());
                found.push(match dead {
                    Some(d) => (
                        Some(d.line),
                        format!(
                            "{}: assertion `{}` can no longer fail: {}",
                            what(b),
                            shown(&a.text),
                            d.dead.as_deref().unwrap_or_default()
                        ),
                    ),
                    None => (
                        Some(p.line),
                        format!(
                            "{}: assertion `{}` (line {} at the base, {}) was removed",
                            what(b),
                            shown(&a.text),
                            a.line,
                            a.kind.name()
                        ),
                    ),
                });
            }
        }
    }
    found
}

/// Test support: the findings' messages of `after` against `before`, both
/// read by `parse`.
#[cfg(test)]
pub fn findings_of(
    parse: impl Fn(&str) -> Result<Parsed, String>,
    before: &str,
    after: &str,
) -> Vec<String> {
    let (b, a) = (parse(before).unwrap(), parse(after).unwrap());
    judge(&b, &a).into_iter().map(|(_, m)| m).collect()
}

/// Test support: each `(from, to, needle)` edit of `base` has a finding
/// holding `needle`.
#[cfg(test)]
#[track_caller]
pub fn edits_found(
    parse: impl Fn(&str) -> Result<Parsed, String> + Copy,
    base: &str,
    edits: &[(&str, &str, &str)],
) {
    for (from, to, needle) in edits {
        let patched = base.replace(from, to);
        assert_ne!(patched, base, "{from}");
        let f = findings_of(parse, base, &patched);
        assert!(f.iter().any(|m| m.contains(needle)), "{to}: {f:?}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(text: &str, kind: Kind) -> Assertion {
        Assertion {
            text: text.into(),
            line: 1,
            kind,
            dead: None,
            callee: None,
            plain: false,
        }
    }

    fn unit(id: &str, asserts: Vec<Assertion>) -> Unit {
        Unit {
            id: id.into(),
            is_test: true,
            line: 1,
            asserts,
            risks: Vec::new(),
        }
    }

    #[test]
    fn a_stronger_or_equal_replacement_holds_and_a_weaker_one_is_named() {
        let base = Parsed {
            units: vec![unit("t", vec![a("x == 1", Kind::Equality)])],
        };
        let same = Parsed {
            units: vec![unit("t", vec![a("x == 2", Kind::Equality)])],
        };
        assert!(judge(&base, &same).is_empty());
        let weaker = Parsed {
            units: vec![unit("t", vec![a("x", Kind::Truthiness)])],
        };
        let f = judge(&base, &weaker);
        assert_eq!(f.len(), 1);
        assert!(f[0].1.contains("replaced by a weaker one"), "{f:?}");
    }

    #[test]
    fn an_assertion_added_to_another_test_offsets_nothing() {
        let base = Parsed {
            units: vec![
                unit("t1", vec![a("x == 1", Kind::Equality)]),
                unit("t2", vec![]),
            ],
        };
        let patched = Parsed {
            units: vec![
                unit("t1", vec![]),
                unit(
                    "t2",
                    vec![a("y == 1", Kind::Equality), a("z == 1", Kind::Equality)],
                ),
            ],
        };
        let f = judge(&base, &patched);
        assert_eq!(f.len(), 1);
        assert!(f[0].1.contains("`t1`: assertion `x == 1`"), "{f:?}");
        assert!(f[0].1.contains("was removed"), "{f:?}");
    }

    #[test]
    fn lines_are_one_based() {
        let l = Lines::new("a\nb\n\nc");
        assert_eq!((l.line(0), l.line(2), l.line(4), l.line(5)), (1, 2, 3, 4));
    }
}
