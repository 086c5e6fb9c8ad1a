// Package termsafe is the one rule for text that came from outside ctxlab
// (other users' thread names, command lines, the machine's host name and
// CPU model, every field of an imported run file) in every format a
// person reads: terminal tables, markdown, CSV, bench, HTML and SVG. An
// escape sequence in a thread name could set the window title, rewrite
// the screen or write to the clipboard (OSC 52); a newline could forge a
// line; a bidi override could make text read backwards. Such text is
// shown Go-quoted (%q) instead. JSON is data and keeps the text as it is,
// with what could still act on a terminal written as \u escapes (JSON).
package termsafe

import (
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// String returns s as it is when it is valid UTF-8 made of printable
// characters and spaces, and strconv.Quote(s) otherwise, so that control
// characters (C0, DEL, C1), invalid bytes and invisible format characters
// (bidi overrides) show as escapes: "\x1b]52;c;SGk=\a".
func String(s string) string {
	if Safe(s) {
		return s
	}
	return strconv.Quote(s)
}

// MarkdownCell is String(s) for a cell of a markdown table: a "|" would
// end the cell, so it is escaped too.
func MarkdownCell(s string) string { return strings.ReplaceAll(String(s), "|", `\|`) }

// Safe reports whether s prints as itself on a terminal: valid UTF-8 of
// graphic characters and spaces only, so no C0 or C1 control, DEL, tab,
// format character (bidi overrides and isolates, U+202A–U+202E and
// U+2066–U+2069) or line separator.
func Safe(s string) bool {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n <= 1 {
				return false
			}
		}
		if r != ' ' && !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// Strings returns a deep copy of v in which every string (struct fields,
// slice and map elements, map keys) went through String. Unexported
// fields are copied as they are. v itself is not changed.
func Strings[T any](v T) T {
	in := reflect.ValueOf(&v).Elem()
	out := reflect.New(in.Type()).Elem()
	copyEscaped(out, in)
	return out.Interface().(T)
}

func copyEscaped(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.String:
		dst.SetString(String(src.String()))
	case reflect.Pointer:
		if !src.IsNil() {
			p := reflect.New(src.Type().Elem())
			copyEscaped(p.Elem(), src.Elem())
			dst.Set(p)
		}
	case reflect.Struct:
		dst.Set(src)
		for i := 0; i < src.NumField(); i++ {
			if dst.Field(i).CanSet() {
				copyEscaped(dst.Field(i), src.Field(i))
			}
		}
	case reflect.Slice:
		if !src.IsNil() {
			s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
			for i := 0; i < src.Len(); i++ {
				copyEscaped(s.Index(i), src.Index(i))
			}
			dst.Set(s)
		}
	case reflect.Array:
		for i := 0; i < src.Len(); i++ {
			copyEscaped(dst.Index(i), src.Index(i))
		}
	case reflect.Map:
		if !src.IsNil() {
			m := reflect.MakeMapWithSize(src.Type(), src.Len())
			for it := src.MapRange(); it.Next(); {
				k := reflect.New(src.Type().Key()).Elem()
				copyEscaped(k, it.Key())
				e := reflect.New(src.Type().Elem()).Elem()
				copyEscaped(e, it.Value())
				m.SetMapIndex(k, e)
			}
			dst.Set(m)
		}
	case reflect.Interface:
		if !src.IsNil() {
			e := reflect.New(src.Elem().Type()).Elem()
			copyEscaped(e, src.Elem())
			dst.Set(e)
		}
	default:
		dst.Set(src)
	}
}

// JSON wraps w, which receives JSON text, so that the characters that are
// not C0 but still drive or reorder a terminal (DEL, C1 controls such as the
// one-byte CSI U+009B, bidi overrides and isolates, other format and
// unassigned characters) are written as \uXXXX escapes. encoding/json
// escapes C0, U+2028 and U+2029 but writes these raw; the escape is
// lossless, so the JSON still decodes to exactly the text it holds.
// Outside strings JSON is ASCII, so only string contents change.
func JSON(w io.Writer) io.Writer { return &jsonWriter{w: w} }

type jsonWriter struct {
	w    io.Writer
	tail []byte // an incomplete UTF-8 sequence from the end of the last Write
}

func (j *jsonWriter) Write(p []byte) (int, error) {
	buf := append(j.tail, p...)
	j.tail = nil
	var out []byte
	i := 0
	for i < len(buf) {
		if buf[i] == 0x7f { // DEL, which encoding/json leaves raw too
			out = append(out, `\u007f`...)
			i++
			continue
		}
		if buf[i] < utf8.RuneSelf {
			out = append(out, buf[i])
			i++
			continue
		}
		if !utf8.FullRune(buf[i:]) {
			j.tail = append([]byte(nil), buf[i:]...)
			break
		}
		r, n := utf8.DecodeRune(buf[i:])
		if r == utf8.RuneError || unicode.IsPrint(r) {
			out = append(out, buf[i:i+n]...)
		} else {
			for _, u := range utf16.Encode([]rune{r}) {
				out = fmt.Appendf(out, `\u%04x`, u)
			}
		}
		i += n
	}
	if _, err := j.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
