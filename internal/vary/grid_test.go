package vary

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Every bad --vary is refused with ErrBadInput, naming the bad part and
// what is allowed.
func TestParseAxisRefuses(t *testing.T) {
	many := "T=" + strings.Repeat("1,", MaxPoints) + "x"
	for _, tc := range []struct{ in, want string }{
		{"T", `"T": want NAME=V1,V2[,…]`},
		{"T=", `"T=": the list of values is empty; want 1..64 values`},
		{"T=2,2", `value "2" is given twice (values 1 and 2); give each value once`},
		{"T=2,4,2", `value "2" is given twice (values 1 and 3)`},
		{"1T=2,4", `NAME "1T" is not an environment variable name; want letters, digits and _, not starting with a digit`},
		{"T-X=2,4", `NAME "T-X" is not an environment variable name`},
		{"=2,4", `NAME "" is not an environment variable name`},
		{"T=2,,4", `value 2 of 3 is empty`},
		{"T=2,", `value 2 of 2 is empty`},
		{"P=a/b,c", `value "a/b" has a /`},
		{"P=a\x01,c", `has a control character`},
		{many, "65 values; want 1..64"},
	} {
		_, err := ParseAxis(tc.in)
		if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseAxis(%q) = %v, want ErrBadInput saying %q", tc.in, err, tc.want)
		}
	}
	a, err := ParseAxis("OMP_NUM_THREADS=1,02,2,x=y")
	if err != nil || a.Name != "OMP_NUM_THREADS" || !slices.Equal(a.Values, []string{"1", "02", "2", "x=y"}) {
		t.Errorf("ParseAxis: %+v, %v", a, err)
	}
}

func axes(t *testing.T, specs ...string) []Axis {
	t.Helper()
	var out []Axis
	for _, s := range specs {
		a, err := ParseAxis(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}

func TestGridBoundAndOrder(t *testing.T) {
	for _, tc := range []struct {
		specs []string
		want  string
	}{
		{[]string{"A=1,2,3,4,5,6,7,8", "B=1,2,3,4,5,6,7,8,9"}, "a grid of 8 A × 9 B values is more than 64 points; want 2..64"},
		{[]string{"A=1,2", "A=3,4"}, "A is varied twice"},
		{[]string{"T=5"}, "T=5 gives 1 value in all; want 2..64 points"},
		{nil, "no --vary given"},
	} {
		_, err := Grid(axes(t, tc.specs...))
		if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Grid(%v) = %v, want %q", tc.specs, err, tc.want)
		}
	}
	ps, err := Grid(axes(t, "T=2,32", "N=a,b,c"))
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, p := range ps {
		labels = append(labels, p.Label())
	}
	if want := []string{"T=2/N=a", "T=2/N=b", "T=2/N=c", "T=32/N=a", "T=32/N=b", "T=32/N=c"}; !slices.Equal(labels, want) {
		t.Errorf("grid %v, want %v", labels, want)
	}
	if got := Label(ps); got != "T=2,32 × N=a,b,c" {
		t.Errorf("Label = %q", got)
	}
	ps, err = Grid(axes(t, "A=1,2,3,4,5,6,7,8", "B=1,2,3,4,5,6,7,8"))
	if err != nil || len(ps) != MaxPoints {
		t.Errorf("a grid of exactly %d points: %d, %v", MaxPoints, len(ps), err)
	}
}

// {NAME} goes into every argument, NAME=value into the environment,
// replacing what was there.
func TestPointExpandAndEnv(t *testing.T) {
	p := Point{Names: []string{"T", "GOMAXPROCS"}, Values: []string{"32", "4"}}
	got := p.Expand([]string{"./bench", "--threads={T}", "{T}x{T}", "{GOMAXPROCS}", "{X}", "{}"})
	if want := []string{"./bench", "--threads=32", "32x32", "4", "{X}", "{}"}; !slices.Equal(got, want) {
		t.Errorf("Expand = %q, want %q", got, want)
	}
	env := p.Env([]string{"HOME=/h", "GOMAXPROCS=1", "TX=1"})
	if want := []string{"HOME=/h", "TX=1", "T=32", "GOMAXPROCS=4"}; !slices.Equal(env, want) {
		t.Errorf("Env = %q, want %q", env, want)
	}
	if p.Params()["T"] != "32" {
		t.Errorf("Params = %v", p.Params())
	}
}

// Each round holds every point once, and the rounds are shuffled.
func TestRounds(t *testing.T) {
	rs := Rounds(5, 40, rand.New(rand.NewPCG(1, 2)))
	if len(rs) != 40 {
		t.Fatalf("%d rounds", len(rs))
	}
	orders := map[string]bool{}
	for _, r := range rs {
		s := slices.Clone(r)
		slices.Sort(s)
		if !slices.Equal(s, []int{0, 1, 2, 3, 4}) {
			t.Fatalf("round %v is not every point once", r)
		}
		orders[fmtInts(r)] = true
	}
	if len(orders) < 10 {
		t.Errorf("only %d distinct orders in 40 rounds: not shuffled", len(orders))
	}
}

func fmtInts(xs []int) string {
	var b strings.Builder
	for _, x := range xs {
		b.WriteByte(byte('0' + x))
	}
	return b.String()
}
