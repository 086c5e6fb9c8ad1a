package termsafe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for in, want := range map[string]string{
		"pingpong/thread/futex": "pingpong/thread/futex",
		"µs · ≈ 2 switches":     "µs · ≈ 2 switches",
		"":                      "",
		"\x1b]52;c;SGk=\x07":    `"\x1b]52;c;SGk=\a"`,
		"a\nb":                  `"a\nb"`,
		"tab\there":             `"tab\there"`,
		"del\x7f":               `"del\x7f"`,
		"c1\u009b2J":            `"c1\u009b2J"`,
		"bidi\u202egnp.exe":     `"bidi\u202egnp.exe"`,
		"bad\xff":               `"bad\xff"`,
		"nul\x00":               `"nul\x00"`,
		"cr\roverwrite":         `"cr\roverwrite"`,
		"bs\b":                  `"bs\b"`,
		"\x1b[2J\x1b[H":         `"\x1b[2J\x1b[H"`,
		"iso\u2066x\u2069":      `"iso\u2066x\u2069"`,
		"lre\u202a":             `"lre\u202a"`,
		"ls\u2028":              `"ls\u2028"`,
		"c1 first\u0080":        `"c1 first\u0080"`,
		"c1 last\u009f":         `"c1 last\u009f"`,
		"nbsp\u00a0ok":          `"nbsp\u00a0ok"`, // a space that is not one
	} {
		if got := String(in); got != want {
			t.Errorf("String(%q) = %s, want %s", in, got, want)
		}
	}
}

type inner struct {
	Names []string
	M     map[string]string
	Any   any
	when  time.Time
}

type outer struct {
	Name string
	In   *inner
	Arr  [2]string
	N    int
}

func TestStringsCopiesAndEscapesEverywhere(t *testing.T) {
	now := time.Now()
	v := &outer{Name: "\x1b[2J", In: &inner{Names: []string{"ok", "\a"}, M: map[string]string{"\x1bk": "\x1bv"}, Any: "\x07", when: now},
		Arr: [2]string{"x", "\r"}, N: 3}
	c := Strings(v)
	if v.Name != "\x1b[2J" || v.In.Names[1] != "\a" {
		t.Fatal("Strings changed its input")
	}
	if c.Name != `"\x1b[2J"` || c.In.Names[0] != "ok" || c.In.Names[1] != `"\a"` || c.In.M[`"\x1bk"`] != `"\x1bv"` ||
		c.In.Any != `"\a"` || c.Arr[1] != `"\r"` || c.N != 3 || !c.In.when.Equal(now) {
		t.Fatalf("copy: %+v %+v", c, c.In)
	}
}

// FuzzString: the result never carries a control character, and text
// that needed no escaping is returned unchanged.
func FuzzString(f *testing.F) {
	for _, s := range []string{"", "abc", "\x1b]0;title\x07", "\xff\xfe", "µ", "\u202e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := String(s)
		if !Safe(got) || !utf8.ValidString(got) {
			t.Fatalf("String(%q) = %q is not safe", s, got)
		}
		if Safe(s) != (got == s) {
			t.Fatalf("String(%q) = %q changed safe text or kept unsafe text", s, got)
		}
		if strings.ContainsRune(got, 0x1b) {
			t.Fatalf("escape left in %q", got)
		}
	})
}

// A markdown cell is escaped as any outside text is, and its "|" too, so
// a name cannot add a column.
func TestMarkdownCell(t *testing.T) {
	for in, want := range map[string]string{
		"pingpong/thread/futex": "pingpong/thread/futex",
		"a|b":                   `a\|b`,
		"\x1b|":                 `"\x1b\|"`,
	} {
		if got := MarkdownCell(in); got != want {
			t.Errorf("MarkdownCell(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestJSONEscapesWhatEncodingJSONLeaves: C1 and bidi controls come out as
// \u escapes, split writes included, and the JSON decodes to the same text.
func TestJSONEscapesWhatEncodingJSONLeaves(t *testing.T) {
	in := "a\u009b31m b\u202e c\u2066 d\U000e0001 é 漢 \xff \x7f"
	var buf bytes.Buffer
	w := JSON(&buf)
	enc, _ := json.Marshal(in)
	for _, b := range enc { // a byte at a time: sequences split across writes
		if _, err := w.Write([]byte{b}); err != nil {
			t.Fatal(err)
		}
	}
	got := buf.String()
	for _, bad := range []string{"\u009b", "\u202e", "\u2066", "\U000e0001", "\x7f"} {
		if strings.Contains(got, bad) {
			t.Errorf("%q still holds %q raw", got, bad)
		}
	}
	if !strings.Contains(got, `\u009b`) || !strings.Contains(got, `\udb40\udc01`) || !strings.Contains(got, "é 漢") {
		t.Errorf("escaped as %q", got)
	}
	var back string
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || back != strings.ToValidUTF8(in, "\uFFFD") {
		t.Errorf("decodes to %q, %v; want %q", back, err, in)
	}
}
