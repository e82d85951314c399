mod unit {
    use super::super::hunks::parse_hunk_header;

    #[test]
    fn hunk_header_defaults_count_to_one() {
        assert_eq!(parse_hunk_header(b"@@ -3 +3 @@\n"), Some((1, 1)));
        assert_eq!(parse_hunk_header(b"@@ -1,0 +1,2 @@ fn x\n"), Some((0, 2)));
        assert_eq!(parse_hunk_header(b"@@ -1,x +1 @@\n"), None);
    }
}

mod shape_tests {
    use super::super::*;
    use crate::record::ReasonCode;

    const HUNK: &str = "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n";

    #[test]
    fn crlf_headers_and_a_non_utf8_heading_parse() {
        let crlf = "diff --git a/x b/x\r\n--- a/x\r\n+++ b/x\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n";
        let a = analyze(crlf.as_bytes());
        assert!(a.reasons.is_empty(), "{:?}", a.reasons);
        let mut latin1 = b"--- a/x\n+++ b/x\n@@ -1 +1 @@ caf\xe9\n-a\n+b\n".to_vec();
        assert!(analyze(&latin1).reasons.is_empty());
        latin1[22] = b'x'; // `@@ -1 +x @@`
        assert_eq!(
            analyze(&latin1).reasons[0].code,
            ReasonCode::MalformedHunkHeader
        );
    }

    #[test]
    fn blank_lines_past_the_counts_are_noted_before_a_header_and_refused_before_a_hunk() {
        let two = format!("{HUNK} \n\n{HUNK}");
        let a = analyze(two.as_bytes());
        assert!(a.reasons.is_empty(), "{:?}", a.reasons);
        assert_eq!(a.notes.len(), 1);
        assert!(a.notes[0].message.contains("2 blank"), "{:?}", a.notes);
        let before_hunk = format!("{HUNK}\n@@ -5 +5 @@\n-x\n+y\n");
        assert_eq!(
            analyze(before_hunk.as_bytes()).reasons[0].code,
            ReasonCode::HunkCountMismatch
        );
        let before_change = format!("{HUNK}\n+lost\n");
        assert_eq!(
            analyze(before_change.as_bytes()).reasons[0].code,
            ReasonCode::HunkCountMismatch
        );
    }

    #[test]
    fn only_a_whole_index_line_may_end_without_a_newline() {
        let head = "diff --git a/e b/e\nnew file mode 100644\n";
        for (last, ok) in [
            ("index 0000000000..e69de29bb2", true),
            ("index 0000000000..e69de29bb2 100644", true),
            ("index 0000000000..e69de29", false),
            ("index 0000000000..e69de29bb2 1006", false),
            ("new file mode 100644", false),
        ] {
            let text = format!("{head}{last}");
            let a = analyze(text.as_bytes());
            assert_eq!(a.reasons.is_empty(), ok, "{last}: {:?}", a.reasons);
        }
    }

    #[test]
    fn every_fault_is_listed() {
        let text = format!("{HUNK}-extra\n{HUNK}@@ -1 +1,x @@\n");
        let codes: Vec<_> = analyze(text.as_bytes())
            .reasons
            .into_iter()
            .map(|r| r.code)
            .collect();
        assert_eq!(
            codes,
            [
                ReasonCode::HunkCountMismatch,
                ReasonCode::MalformedHunkHeader
            ]
        );
    }
}
