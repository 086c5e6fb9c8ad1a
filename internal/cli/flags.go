package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// strictFlags wraps every flag of every command in root so that the rules
// that hold for all of them are written once:
//   - a flag given twice is refused (a later value would hide a bad
//     earlier one), except list flags (--set, --probes), whose values
//     are each validated;
//   - an empty value is refused: no flag takes "" to mean its default;
//   - whole numbers are decimal: pflag's own parser reads 0x10 as 16 and
//     010 as 8.
func strictFlags(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				if _, done := f.Value.(*strictValue); !done {
					f.Value = &strictValue{Value: f.Value}
				}
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// strictValue is a flag's value with strictFlags' rules applied on Set.
type strictValue struct {
	pflag.Value
	set   bool
	first string
}

// errEmptyValue and the other Set errors reach the user through pflag's
// `invalid argument "" for "--cpus" flag: …`, which withFlagUsage turns
// into the flag's name, the value and the flag's usage line (its range).
var errEmptyValue = errors.New("an empty value; give a value or leave the flag out")

func (v *strictValue) Set(s string) error {
	list := isListType(v.Value.Type())
	if s == "" {
		return errEmptyValue
	}
	if v.set && !list {
		return fmt.Errorf("given twice (first %q), give each flag once", v.first)
	}
	if isIntType(v.Value.Type()) {
		d, err := decimal(s)
		if err != nil {
			return err
		}
		s = d
	}
	if err := v.Value.Set(s); err != nil {
		return err
	}
	if !v.set {
		v.set, v.first = true, s
	}
	return nil
}

// decimal checks that s is a whole number written in decimal and returns
// it in a form pflag's base-0 parser reads as decimal too (no leading
// zeros, which it would take as octal).
func decimal(s string) (string, error) {
	digits := strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return "", errors.New("not a decimal whole number")
	}
	neg := strings.HasPrefix(s, "-")
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return "0", nil
	}
	if neg {
		return "-" + digits, nil
	}
	return digits, nil
}

// isListType is a flag that may be given many times, each value added.
func isListType(t string) bool {
	return strings.HasSuffix(t, "Slice") || strings.HasSuffix(t, "Array")
}

func isIntType(t string) bool {
	switch t {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return true
	}
	return false
}
