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
    };
    let mut units = Vec::new();
    w.items(&file.items, "", whole, &mut units);
    crate::units::resolve_helpers(&mut units);
    Ok(Parsed { units })
}

struct Walker<'s> {
    src: &'s str,
    lines: Lines,
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

    fn items(&self, items: &[Item], prefix: &str, test_ctx: bool, out: &mut Vec<Unit>) {
        for item in items {
            match item {
                Item::Fn(f) => self.function(f, prefix, test_ctx, out),
                Item::Mod(m) => {
                    if let Some((_, inner)) = &m.content {
                        let ctx = test_ctx || m.attrs.iter().any(is_cfg_test);
                        let name = format!("{prefix}{}::", m.ident);
                        self.items(inner, &name, ctx, out);
                    }
                }
                _ => {}
            }
        }
    }

    fn function(&self, f: &ItemFn, prefix: &str, test_ctx: bool, out: &mut Vec<Unit>) {
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
            risks: Vec::new(),
        };
        for attr in &f.attrs {
            let p = path_of(attr);
            if p == "doc" || is_test_attr(attr) {
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
        let body = self.src[f.block.span().byte_range()].to_string();
        self.block(&f.block, &None, &body, &mut unit.asserts);
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
                    if let Some(init) = &l.init {
                        // `let f = || assert!(…);` runs only if `f` is used.
                        if let Expr::Closure(c) = &*init.expr {
                            let name = match &l.pat {
                                syn::Pat::Ident(i) => Some(i.ident.to_string()),
                                _ => None,
                            };
                            let closure_dead = dead.clone().or_else(|| {
                                (!name.as_deref().is_some_and(|n| used(body, n))).then(|| {
                                    "it is inside a closure that is never called".to_string()
                                })
                            });
                            self.expr(&c.body, &closure_dead, body, out);
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
        let Some(kind) = macro_kind(&name, m) else {
            return;
        };
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
                self.block(&i.then_branch, &inner, body, out);
                if let Some((_, e)) = &i.else_branch {
                    self.expr(e, dead, body, out);
                }
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
                for arm in &m.arms {
                    self.expr(&arm.body, dead, body, out);
                }
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
                let swallowing = callee
                    .as_ref()
                    .is_some_and(|p| p.last().is_some_and(|l| l == "catch_unwind"));
                let inner = if swallowing {
                    dead.clone().or_else(|| {
                        Some("it is inside `catch_unwind`, which swallows its panic".to_string())
                    })
                } else {
                    dead.clone()
                };
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
                self.expr(&c.receiver, dead, body, out);
                for arg in &c.args {
                    self.arg(arg, dead, body, out);
                }
            }
            Expr::Closure(c) => self.expr(&c.body, dead, body, out),
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
            Expr::Path(p)
                if p.path.segments.last().is_some_and(|s| s.ident == "exit")
                    && p.path.segments.iter().any(|s| s.ident == "process") =>
            {
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
    Some(match plain {
        "assert_eq" => Kind::Equality,
        "assert_ne" => Kind::Comparison,
        "assert_matches" | "matches" => Kind::Type,
        "panic" | "unreachable" | "unimplemented" | "todo" => Kind::Fail,
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
            BinOp::Gt(_) | BinOp::Ge(_) | BinOp::Ne(_) if is_len(&b.left) && is_zero(&b.right) => {
                Kind::Length
            }
            BinOp::Ne(_) | BinOp::Lt(_) | BinOp::Le(_) | BinOp::Gt(_) | BinOp::Ge(_) => {
                Kind::Comparison
            }
            BinOp::And(_) => condition_kind(&b.left).max_by_tier(condition_kind(&b.right)),
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
        let b = parse("tests/it.rs", before).unwrap();
        let a = parse("tests/it.rs", after).unwrap();
        crate::units::judge(&b, &a)
            .into_iter()
            .map(|(_, m)| m)
            .collect()
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

    #[test]
    fn dead_assertions_deleted_tests_and_added_attributes_are_named() {
        let early = BASE.replace(
            "    let x = parse(\"a\");\n    assert_eq!(x, Some(1));",
            "    let x = parse(\"a\");\n    return;\n    assert_eq!(x, Some(1));",
        );
        assert!(
            findings(BASE, &early)
                .iter()
                .any(|m| m.contains("can no longer fail"))
        );
        let never = BASE.replace(
            "    assert_eq!(x, Some(1));",
            "    if false {\n        assert_eq!(x, Some(1));\n    }",
        );
        assert!(
            findings(BASE, &never)
                .iter()
                .any(|m| m.contains("can no longer fail"))
        );
        let swallowed = BASE.replace(
            "    assert_eq!(x, Some(1));",
            "    let _ = std::panic::catch_unwind(|| {\n        assert_eq!(x, Some(1));\n    });",
        );
        assert!(
            findings(BASE, &swallowed)
                .iter()
                .any(|m| m.contains("can no longer fail"))
        );
        let closure = BASE.replace(
            "    assert_eq!(x, Some(1));",
            "    let f = || assert_eq!(x, Some(1));",
        );
        assert!(
            findings(BASE, &closure)
                .iter()
                .any(|m| m.contains("can no longer fail"))
        );
        let deleted = BASE.replace("#[test]\nfn parses()", "fn parses()");
        assert!(
            findings(BASE, &deleted)
                .iter()
                .any(|m| m.contains("no longer collected"))
        );
        let gone = BASE.replace("fn ordered()", "fn ordered_renamed()");
        assert!(
            findings(BASE, &gone)
                .iter()
                .any(|m| m.contains("`more::ordered`"))
        );
        let cfg = BASE.replace(
            "#[test]\nfn parses()",
            "#[test]\n#[cfg(any())]\nfn parses()",
        );
        assert!(findings(BASE, &cfg).iter().any(|m| m.contains("cfg")));
        let panics = BASE.replace(
            "#[test]\nfn parses()",
            "#[test]\n#[should_panic]\nfn parses()",
        );
        assert!(
            findings(BASE, &panics)
                .iter()
                .any(|m| m.contains("should_panic"))
        );
        let dropped = BASE.replace("#[should_panic(expected = \"empty\")]\n", "");
        assert!(
            findings(BASE, &dropped)
                .iter()
                .any(|m| m.contains("`empty_panics`"))
        );
        // The helper made empty: the test calling it lost its assertion.
        let hollow = BASE.replace(
            "    assert_eq!(parse(s), Some(1));\n",
            "    let _ = parse(s);\n",
        );
        assert!(
            findings(BASE, &hollow)
                .iter()
                .any(|m| m.contains("`helper`")),
            "{:?}",
            findings(BASE, &hollow)
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
