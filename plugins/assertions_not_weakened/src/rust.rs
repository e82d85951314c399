//! Rust test files on a syntax tree (`syn`): each `#[test]` function (and
//! `#[tokio::test]`, `#[rstest]`, `#[test_case]`…) is a unit named by its
//! module path in the file (`tests::parses`); functions of a test context
//! (a file under `tests/`, a `#[cfg(test)]` module) are helpers. Assertions:
//!
//! - exact: `assert_eq!`, `assert!(a == b)`, `#[should_panic]`, `panic!`,
//!   `unreachable!`, snapshot macros (`insta::assert_*snapshot!`), and any
//!   other `assert_*!` macro (a helper of its own);
//! - comparison: `assert_ne!`, `assert!(a < b)` and the other orderings,
//!   `contains`/`starts_with`/`ends_with`, `matches!`/`assert_matches!`;
//! - truthiness: `assert!(x)`, `is_ok()`/`is_some()`/`is_err()`/`is_none()`,
//!   `!x.is_empty()`, `x.len() > 0`;
//! - a constant: `assert!(true)`.
//!
//! `debug_assert*!` and `prop_assert*!` count as their plain forms. After a
//! `return` or `std::process::exit`, under `if false`, inside
//! `catch_unwind`, or in a closure bound to a name the function never uses
//! again, an assertion can no longer fail. An attribute added to a test
//! (`#[cfg(…)]` takes it out of the build, `#[should_panic]` turns its
//! failure into a pass) is a finding.

use crate::units::{Assertion, Kind, Lines, Parsed, Unit, snippet, used};
use syn::spanned::Spanned;
use syn::{Attribute, Block, Expr, Item, ItemFn, Macro, Stmt};

/// Parses `src` (the file at `path`) into its test units.
pub fn parse(path: &str, src: &str) -> Result<Parsed, String> {
    let file = syn::parse_file(src).map_err(|e| {
        let at = e.span().start();
        format!("line {}: {e}", at.line)
    })?;
    let whole = path.starts_with("tests/") || path.contains("/tests/");
    let w = Walker {
        src,
        lines: Lines::new(src),
        guard: std::cell::Cell::new(0),
        locals: std::cell::RefCell::new(Vec::new()),
    };
    let mut units = Vec::new();
    // `#![cfg(…)]`/`#![cfg_attr(…)]` on the file reach every test in it.
    let outer: Vec<(String, String)> = file
        .attrs
        .iter()
        .filter(|a| path_of(a) != "doc")
        .map(|a| {
            let (text, _) = w.text(a);
            (
                format!("file-attr:{text}"),
                format!("the file's attribute `{text}` can take all its tests out of the build"),
            )
        })
        .collect();
    w.items(&file.items, "", whole, &outer, &mut units);
    crate::units::resolve_helpers(&mut units);
    Ok(Parsed { units })
}

struct Walker<'s> {
    src: &'s str,
    lines: Lines,
    /// How many closures, conditions or arms the walk is inside: a
    /// `panic!` there is conditional, not an explicit failure.
    guard: std::cell::Cell<u32>,
    /// Names the function being walked binds itself (a local `fn`, a
    /// `let`): a call to one is not a call to the file's helper of that
    /// name.
    locals: std::cell::RefCell<Vec<String>>,
}

/// Attributes that change nothing about whether or how a test runs.
fn harmless(path: &str) -> bool {
    matches!(
        path,
        "doc"
            | "allow"
            | "warn"
            | "deny"
            | "expect"
            | "forbid"
            | "track_caller"
            | "inline"
            | "must_use"
            | "rustfmt::skip"
    ) || path.starts_with("clippy::")
}

fn path_of(attr: &Attribute) -> String {
    attr.path()
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

/// `#[test]`, `#[tokio::test]`, `#[rstest]`, `#[test_case(…)]`, …
fn is_test_attr(attr: &Attribute) -> bool {
    let p = path_of(attr);
    let last = p.rsplit("::").next().unwrap_or_default();
    matches!(
        last,
        "test" | "rstest" | "test_case" | "quickcheck" | "proptest"
    )
}

fn is_cfg_test(attr: &Attribute) -> bool {
    path_of(attr) == "cfg"
        && attr
            .meta
            .require_list()
            .is_ok_and(|l| l.tokens.to_string().split_whitespace().collect::<String>() == "test")
}

impl Walker<'_> {
    fn text(&self, node: &impl Spanned) -> (String, u32) {
        let span = node.span();
        let range = span.byte_range();
        (
            snippet(self.src, range.start, range.end),
            self.lines.line(range.start),
        )
    }

    fn items(
        &self,
        items: &[Item],
        prefix: &str,
        test_ctx: bool,
        outer: &[(String, String)],
        out: &mut Vec<Unit>,
    ) {
        for item in items {
            match item {
                Item::Fn(f) => self.function(f, prefix, test_ctx, outer, out),
                Item::Mod(m) => {
                    if let Some((_, inner)) = &m.content {
                        let ctx = test_ctx || m.attrs.iter().any(is_cfg_test);
                        let name = format!("{prefix}{}::", m.ident);
                        // A module's own attributes (but `#[cfg(test)]`)
                        // reach every test in it.
                        let mut outer = outer.to_vec();
                        for a in m.attrs.iter().filter(|a| !is_cfg_test(a)) {
                            if harmless(&path_of(a)) {
                                continue;
                            }
                            let (text, _) = self.text(a);
                            outer.push((
                                format!("mod-attr:{text}"),
                                format!(
                                    "its module's attribute `{text}` can take it out of the build"
                                ),
                            ));
                        }
                        self.items(inner, &name, ctx, &outer, out);
                    }
                }
                _ => {}
            }
        }
    }

    fn function(
        &self,
        f: &ItemFn,
        prefix: &str,
        test_ctx: bool,
        outer: &[(String, String)],
        out: &mut Vec<Unit>,
    ) {
        let is_test = f.attrs.iter().any(is_test_attr);
        if !is_test && !test_ctx {
            return;
        }
        let (_, line) = self.text(&f.sig.ident);
        let mut unit = Unit {
            id: format!("{prefix}{}", f.sig.ident),
            is_test,
            line,
            asserts: Vec::new(),
            risks: outer.to_vec(),
        };
        for attr in &f.attrs {
            let p = path_of(attr);
            if harmless(&p) || is_test_attr(attr) {
                continue;
            }
            let (text, line) = self.text(attr);
            if p == "should_panic" {
                // A panic is what the test asserts.
                unit.asserts.push(Assertion {
                    text: text.clone(),
                    line,
                    kind: Kind::Raises,
                    dead: None,
                    callee: None,
                    plain: false,
                });
            }
            let why = match p.as_str() {
                "cfg" => "an added `#[cfg(…)]` can take it out of the build".to_string(),
                "should_panic" => {
                    "an added `#[should_panic]` makes a panic (any failed assertion) a pass"
                        .to_string()
                }
                "ignore" => continue, // a marker, judged as one
                _ => format!("an added attribute `{text}` can change how it runs"),
            };
            unit.risks.push((format!("attr:{text}"), why));
        }
        // Comments and strings blanked: a name in a comment is no use.
        let body = crate::count::strip(
            crate::count::Lang::Rust,
            &self.src[f.block.span().byte_range()],
        );
        self.locals.borrow_mut().clear();
        self.block(&f.block, &None, &body, &mut unit.asserts);
        let locals = self.locals.borrow();
        for a in unit.asserts.iter_mut() {
            if a.callee.as_ref().is_some_and(|c| locals.contains(c)) {
                a.callee = None;
            }
        }
        out.retain(|u| u.id != unit.id);
        out.push(unit);
    }

    /// A block's statements in order; after one that always ends it
    /// (`return`, `std::process::exit`, `panic!` outside an assertion) the
    /// rest is dead.
    fn block(&self, b: &Block, dead: &Option<String>, body: &str, out: &mut Vec<Assertion>) {
        let mut dead = dead.clone();
        for stmt in &b.stmts {
            match stmt {
                Stmt::Local(l) => {
                    if let syn::Pat::Ident(i) = &l.pat {
                        self.locals.borrow_mut().push(i.ident.to_string());
                    }
                    if let Some(init) = &l.init {
                        // `let f = || assert!(…);` (or `Box::new(|| …)`)
                        // runs only if `f` is used.
                        if let Some(c) = closure_in(&init.expr) {
                            let name = match &l.pat {
                                syn::Pat::Ident(i) => Some(i.ident.to_string()),
                                _ => None,
                            };
                            let closure_dead = dead.clone().or_else(|| {
                                (!name.as_deref().is_some_and(|n| used(body, n))).then(|| {
                                    "it is inside a closure that is never called".to_string()
                                })
                            });
                            self.guarded(|| self.expr(&c.body, &closure_dead, body, out));
                        } else {
                            self.expr(&init.expr, &dead, body, out);
                        }
                        if let Some((_, e)) = &init.diverge {
                            self.expr(e, &dead, body, out);
                        }
                    }
                }
                Stmt::Expr(e, _) => self.expr(e, &dead, body, out),
                Stmt::Macro(m) => self.mac(&m.mac, &dead, out),
                Stmt::Item(Item::Fn(f)) => self.locals.borrow_mut().push(f.sig.ident.to_string()),
                Stmt::Item(_) => {}
            }
            if dead.is_none()
                && let Some(why) = terminator(stmt)
            {
                let (_, line) = self.text(stmt);
                dead = Some(format!("it comes after {why} on line {line}"));
            }
        }
    }

    fn mac(&self, m: &Macro, dead: &Option<String>, out: &mut Vec<Assertion>) {
        let name = m
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        let Some(mut kind) = macro_kind(&name, m) else {
            return;
        };
        if kind == Kind::Fail && self.guard.get() > 0 {
            // `if got != want { panic!() }`, `unwrap_or_else(|e| panic!())`:
            // what it asserts is a condition this reader does not rate.
            kind = Kind::Truthiness;
        }
        let (text, line) = self.text(m);
        out.push(Assertion {
            text,
            line,
            kind,
            dead: dead.clone(),
            callee: None,
            plain: false,
        });
    }

    fn expr(&self, e: &Expr, dead: &Option<String>, body: &str, out: &mut Vec<Assertion>) {
        match e {
            Expr::Macro(m) => self.mac(&m.mac, dead, out),
            Expr::Block(b) => self.block(&b.block, dead, body, out),
            Expr::Unsafe(b) => self.block(&b.block, dead, body, out),
            Expr::Async(b) => self.block(&b.block, dead, body, out),
            Expr::If(i) => {
                let never = matches!(&*i.cond, Expr::Lit(l) if matches!(&l.lit, syn::Lit::Bool(b) if !b.value));
                let inner = dead.clone().or_else(|| {
                    never.then(|| "it is under `if false`, which never runs".to_string())
                });
                self.expr(&i.cond, dead, body, out);
                self.guarded(|| {
                    self.block(&i.then_branch, &inner, body, out);
                    if let Some((_, e)) = &i.else_branch {
                        self.expr(e, dead, body, out);
                    }
                });
            }
            Expr::ForLoop(f) => {
                self.expr(&f.expr, dead, body, out);
                self.block(&f.body, dead, body, out);
            }
            Expr::While(w) => {
                let never = matches!(&*w.cond, Expr::Lit(l) if matches!(&l.lit, syn::Lit::Bool(b) if !b.value));
                let inner = dead.clone().or_else(|| {
                    never.then(|| "it is under `while false`, which never runs".to_string())
                });
                self.block(&w.body, &inner, body, out);
            }
            Expr::Loop(l) => self.block(&l.body, dead, body, out),
            Expr::Match(m) => {
                self.expr(&m.expr, dead, body, out);
                self.guarded(|| {
                    for arm in &m.arms {
                        self.expr(&arm.body, dead, body, out);
                    }
                });
            }
            Expr::Call(c) => {
                let callee = match &*c.func {
                    Expr::Path(p) => Some(
                        p.path
                            .segments
                            .iter()
                            .map(|s| s.ident.to_string())
                            .collect::<Vec<_>>(),
                    ),
                    _ => None,
                };
                let inner = swallowed(
                    callee.as_ref().and_then(|p| p.last()).map(String::as_str),
                    dead,
                );
                if let Some(p) = callee.filter(|p| p.len() == 1) {
                    // A call to a function the file may define: an
                    // assertion of that function's strength when it has any.
                    let (text, line) = self.text(c);
                    out.push(Assertion {
                        text,
                        line,
                        kind: Kind::Constant,
                        dead: dead.clone(),
                        callee: Some(p[0].clone()),
                        plain: true,
                    });
                }
                for arg in &c.args {
                    self.arg(arg, &inner, body, out);
                }
            }
            Expr::MethodCall(c) => {
                let inner = swallowed(Some(&c.method.to_string()), dead);
                // `AssertUnwindSafe(|| …).catch_unwind()`: what it is
                // called on is swallowed too.
                self.expr(&c.receiver, &inner, body, out);
                for arg in &c.args {
                    self.arg(arg, &inner, body, out);
                }
            }
            Expr::Closure(c) => self.guarded(|| self.expr(&c.body, dead, body, out)),
            Expr::Paren(p) => self.expr(&p.expr, dead, body, out),
            Expr::Await(a) => self.expr(&a.base, dead, body, out),
            Expr::Try(t) => self.expr(&t.expr, dead, body, out),
            Expr::Return(r) => {
                if let Some(e) = &r.expr {
                    self.expr(e, dead, body, out);
                }
            }
            Expr::Assign(a) => self.expr(&a.right, dead, body, out),
            Expr::Reference(r) => self.expr(&r.expr, dead, body, out),
            _ => {}
        }
    }

    /// A call's argument: a closure passed to a call runs (`for_each(|x|
    /// assert!(…))`), or `catch_unwind` swallows it (`inner`).
    fn arg(&self, e: &Expr, dead: &Option<String>, body: &str, out: &mut Vec<Assertion>) {
        self.expr(e, dead, body, out)
    }

    fn guarded(&self, f: impl FnOnce()) {
        self.guard.set(self.guard.get() + 1);
        f();
        self.guard.set(self.guard.get() - 1);
    }
}

/// The closure an initialiser binds: `|| …`, `Box::new(|| …)`, `(|| …)`.
fn closure_in(e: &Expr) -> Option<&syn::ExprClosure> {
    match e {
        Expr::Closure(c) => Some(c),
        Expr::Paren(p) => closure_in(&p.expr),
        Expr::Call(c) if c.args.len() == 1 => match &*c.func {
            Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "new") => {
                closure_in(&c.args[0])
            }
            _ => None,
        },
        _ => None,
    }
}

/// What a call named `name` does to a panic in the closures it is given:
/// `catch_unwind` swallows it; `spawn` moves it to another thread or task,
/// where it does not fail the test.
fn swallowed(name: Option<&str>, dead: &Option<String>) -> Option<String> {
    dead.clone().or_else(|| match name? {
        "catch_unwind" => Some("it is inside `catch_unwind`, which swallows its panic".into()),
        "spawn" | "spawn_blocking" | "spawn_local" => {
            Some("it runs in a spawned thread or task, whose panic does not fail the test".into())
        }
        _ => None,
    })
}

/// What a statement that always ends its block is: `return`, an exit.
fn terminator(stmt: &Stmt) -> Option<&'static str> {
    let e = match stmt {
        Stmt::Expr(e, _) => e,
        _ => return None,
    };
    match e {
        Expr::Return(_) => Some("`return`"),
        Expr::Call(c) => match &*c.func {
            Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "exit") => {
                Some("`std::process::exit`")
            }
            _ => None,
        },
        _ => None,
    }
}

/// The kind of an assertion macro (`None` for any other macro).
fn macro_kind(name: &str, m: &Macro) -> Option<Kind> {
    let plain = name
        .strip_prefix("debug_")
        .or_else(|| name.strip_prefix("prop_"))
        .unwrap_or(name);
    let args = || {
        m.parse_body_with(syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated)
            .ok()
            .map(|a| a.into_iter().collect::<Vec<_>>())
            .unwrap_or_default()
    };
    Some(match plain {
        "assert_eq" | "assert_ne" => {
            let a = args();
            if a.len() >= 2 && (same(&a[0], &a[1]) || (is_lit(&a[0]) && is_lit(&a[1]))) {
                Kind::Constant
            } else if plain == "assert_eq" {
                Kind::Equality
            } else {
                Kind::Comparison
            }
        }
        "assert_matches" | "matches" => Kind::Type,
        "panic" | "unreachable" => Kind::Fail,
        // A placeholder asserts nothing.
        "unimplemented" | "todo" => Kind::Constant,
        "assert" => {
            let cond = m
                .parse_body_with(
                    syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated,
                )
                .ok()
                .and_then(|args| args.into_iter().next());
            match cond {
                Some(c) => condition_kind(&c),
                None => Kind::Truthiness,
            }
        }
        n if n.starts_with("assert_") && n.contains("snapshot") => Kind::Snapshot,
        n if n.starts_with("assert_") => Kind::Helper,
        _ => return None,
    })
}

/// How much `assert!(cond)` pins down.
fn condition_kind(cond: &Expr) -> Kind {
    use syn::BinOp;
    match cond {
        Expr::Lit(l) if matches!(&l.lit, syn::Lit::Bool(_)) => Kind::Constant,
        Expr::Paren(p) => condition_kind(&p.expr),
        Expr::Binary(b) => match b.op {
            BinOp::Eq(_) => {
                if same(&b.left, &b.right) {
                    Kind::Constant
                } else {
                    Kind::Equality
                }
            }
            BinOp::Ge(_) if is_len(&b.left) && is_zero(&b.right) => Kind::Constant,
            BinOp::Gt(_) | BinOp::Ne(_) if is_len(&b.left) && is_zero(&b.right) => Kind::Length,
            _ if same(&b.left, &b.right) => Kind::Constant,
            BinOp::Ne(_) | BinOp::Lt(_) | BinOp::Le(_) | BinOp::Gt(_) | BinOp::Ge(_) => {
                Kind::Comparison
            }
            BinOp::And(_) => condition_kind(&b.left).max_by_tier(condition_kind(&b.right)),
            // Fails only when both sides do: as weak as the weaker.
            BinOp::Or(_) => {
                let (l, r) = (condition_kind(&b.left), condition_kind(&b.right));
                if l.tier() <= r.tier() { l } else { r }
            }
            _ => Kind::Truthiness,
        },
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Not(_)) => match &*u.expr {
            Expr::MethodCall(c) if c.method == "is_empty" => Kind::Length,
            _ => Kind::Truthiness,
        },
        Expr::MethodCall(c) => match c.method.to_string().as_str() {
            "contains" | "starts_with" | "ends_with" | "contains_key" => Kind::Containment,
            "is_ok" | "is_some" | "is_err" | "is_none" => Kind::Defined,
            "eq" => Kind::Equality,
            _ => Kind::Truthiness,
        },
        Expr::Macro(m)
            if m.mac
                .path
                .segments
                .last()
                .is_some_and(|s| s.ident == "matches") =>
        {
            Kind::Type
        }
        _ => Kind::Truthiness,
    }
}

trait ByTier {
    fn max_by_tier(self, other: Kind) -> Kind;
}

impl ByTier for Kind {
    fn max_by_tier(self, other: Kind) -> Kind {
        if other.tier() > self.tier() {
            other
        } else {
            self
        }
    }
}

fn is_lit(e: &Expr) -> bool {
    matches!(e, Expr::Lit(_))
}

fn is_len(e: &Expr) -> bool {
    matches!(e, Expr::MethodCall(c) if c.method == "len")
}

fn is_zero(e: &Expr) -> bool {
    matches!(e, Expr::Lit(l) if matches!(&l.lit, syn::Lit::Int(i) if i.base10_digits() == "0"))
}

/// Two expressions written alike (`x == x`, a tautology).
fn same(a: &Expr, b: &Expr) -> bool {
    use quote::ToTokens;
    a.to_token_stream().to_string() == b.to_token_stream().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn findings(before: &str, after: &str) -> Vec<String> {
        crate::units::findings_of(|s| parse("tests/it.rs", s), before, after)
    }

    const BASE: &str = r#"
use mycrate::parse;

fn check(s: &str) {
    assert_eq!(parse(s), Some(1));
}

#[test]
fn parses() {
    let x = parse("a");
    assert_eq!(x, Some(1));
}

#[test]
#[should_panic(expected = "empty")]
fn empty_panics() {
    parse("");
}

#[test]
fn helper() {
    check("b");
}

mod more {
    #[test]
    fn ordered() {
        assert!(1 < 2);
    }
}
"#;

    #[test]
    fn an_unchanged_file_or_a_stronger_assertion_holds() {
        assert!(findings(BASE, BASE).is_empty());
        let stronger = BASE.replace("assert!(1 < 2);", "assert_eq!(1, 1 + 0);");
        assert!(
            findings(BASE, &stronger).is_empty(),
            "{:?}",
            findings(BASE, &stronger)
        );
    }

    #[test]
    fn a_removed_or_weakened_assertion_is_named() {
        let removed = BASE.replace(
            "fn parses() {\n    let x = parse(\"a\");\n    assert_eq!(x, Some(1));",
            "fn parses() {\n    let x = parse(\"a\");",
        );
        let extra = format!("{removed}\n#[test]\nfn added() {{\n    assert_eq!(2, 2);\n}}\n");
        let f = findings(BASE, &extra);
        assert!(
            f.iter()
                .any(|m| m.contains("`parses`") && m.contains("was removed")),
            "{f:?}"
        );
        let vacuous = BASE.replace("assert_eq!(x, Some(1));", "assert!(x.is_some());");
        let f = findings(BASE, &vacuous);
        assert!(f.iter().any(|m| m.contains("weaker")), "{f:?}");
        let tautology = BASE.replace("assert_eq!(x, Some(1));", "assert!(x == x);");
        assert!(
            findings(BASE, &tautology)
                .iter()
                .any(|m| m.contains("weaker"))
        );
        let constant = BASE.replace("assert!(1 < 2);", "assert!(true);");
        assert!(
            findings(BASE, &constant)
                .iter()
                .any(|m| m.contains("`more::ordered`"))
        );
    }

    /// Each `(from, to)` edit of `BASE` has a finding holding `needle`.
    #[track_caller]
    fn found(edits: &[(&str, &str, &str)]) {
        crate::units::edits_found(|s| parse("tests/it.rs", s), BASE, edits)
    }

    #[test]
    fn dead_assertions_deleted_tests_and_added_attributes_are_named() {
        let x = "    assert_eq!(x, Some(1));";
        let dead = "can no longer fail";
        found(&[
            (x, "    return;\n    assert_eq!(x, Some(1));", dead),
            (
                x,
                "    if false {\n        assert_eq!(x, Some(1));\n    }",
                dead,
            ),
            (
                x,
                "    let _ = std::panic::catch_unwind(|| {\n        assert_eq!(x, Some(1));\n    });",
                dead,
            ),
            (x, "    let f = || assert_eq!(x, Some(1));", dead),
            ("#[test]\nfn parses()", "fn parses()", "no longer collected"),
            ("fn ordered()", "fn ordered_renamed()", "`more::ordered`"),
            (
                "#[test]\nfn parses()",
                "#[test]\n#[cfg(any())]\nfn parses()",
                "cfg",
            ),
            (
                "#[test]\nfn parses()",
                "#[test]\n#[should_panic]\nfn parses()",
                "should_panic",
            ),
            (
                "#[should_panic(expected = \"empty\")]\n",
                "",
                "`empty_panics`",
            ),
            // The helper made empty: the test calling it lost its assertion.
            (
                "    assert_eq!(parse(s), Some(1));\n",
                "    let _ = parse(s);\n",
                "`helper`",
            ),
        ]);
    }

    /// The bypasses a hostile review found in the first version.
    #[test]
    fn the_reviewed_bypasses_are_found() {
        let swap = |from: &str, to: &str| {
            let patched = BASE.replace(from, to);
            assert_ne!(patched, BASE, "{from}");
            findings(BASE, &patched)
        };
        let x = "assert_eq!(x, Some(1));";
        for to in [
            "x.unwrap_or_else(|| panic!(\"none\"));",
            "if x.is_none() { panic!() }",
            "assert_eq!(x, x);",
            "std::thread::spawn(move || assert_eq!(x, Some(1)));",
            "let _ = std::panic::AssertUnwindSafe(|| assert_eq!(x, Some(1))).catch_unwind();",
            "let f = || assert_eq!(x, Some(1)); // f",
            "let f = Box::new(|| assert_eq!(x, Some(1)));",
            "assert!(x.is_some() || true);",
            "use std::process::exit; exit(0); assert_eq!(x, Some(1));",
        ] {
            let f = swap(x, to);
            assert!(f.iter().any(|m| m.contains("`parses`")), "{to}: {f:?}");
        }
        let f = swap("assert!(1 < 2);", "assert!(vec![1].len() >= 0);");
        assert!(f.iter().any(|m| m.contains("`more::ordered`")), "{f:?}");
        // A local function shadowing the helper.
        let f = swap(
            "    check(\"b\");",
            "    fn check(_: &str) {}\n    check(\"b\");",
        );
        assert!(f.iter().any(|m| m.contains("`helper`")), "{f:?}");
        // Module and file attributes.
        let f = swap("mod more {", "#[cfg_attr(all(), cfg(any()))]\nmod more {");
        assert!(
            f.iter()
                .any(|m| m.contains("`more::ordered`") && m.contains("module")),
            "{f:?}"
        );
        let f = findings(BASE, &format!("#![cfg_attr(all(), cfg(any()))]\n{BASE}"));
        assert!(
            f.iter()
                .any(|m| m.contains("`parses`") && m.contains("file")),
            "{f:?}"
        );
        // Harmless attributes and a placeholder replaced are not findings.
        assert!(
            swap(
                "#[test]\nfn parses()",
                "#[test]\n#[allow(clippy::unwrap_used)]\nfn parses()"
            )
            .is_empty()
        );
        let todo = BASE.replace("    parse(\"\");\n}", "    todo!();\n}");
        let done = BASE.replace(
            "    parse(\"\");\n}",
            "    assert!(parse(\"\").is_none());\n}",
        );
        assert!(
            findings(&todo, &done).is_empty(),
            "{:?}",
            findings(&todo, &done)
        );
    }

    #[test]
    fn library_code_outside_cfg_test_is_not_a_unit() {
        let src = "pub fn f() { assert!(true); }\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() { assert_eq!(super::f(), ()); }\n}\n";
        let p = parse("src/lib.rs", src).unwrap();
        let ids: Vec<&str> = p.units.iter().map(|u| u.id.as_str()).collect();
        assert_eq!(ids, ["tests::t"]);
    }
}
