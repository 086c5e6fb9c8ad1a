// Package termsafe keeps text that came from outside ctxlab (other users'
// thread names, command lines, fields of an imported run file) from
// driving the reader's terminal: an escape sequence in a thread name
// could set the window title, rewrite the screen or write to the
// clipboard (OSC 52). Such text is shown Go-quoted (%q) instead.
package termsafe

import (
	"reflect"
	"strconv"
	"unicode"
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

// Safe reports whether s prints as itself on a terminal.
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
