// Package namesaudit holds the cases names_audit_test.go holds its rules
// to: every function named bad* handles an arm's name by hand and must be
// caught; every function named fine* uses names in ways that are fine
// and must not be.
package namesaudit

import (
	"fmt"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

func badPyLiteral(name string) bool { return strings.HasSuffix(name, "/py=3.12") }

func badCutName(a result.Arm) string {
	plan, _, _ := strings.Cut(a.Name, "/py=")
	return plan
}

func badSplitPointer(a *result.Arm) string { return strings.Split(a.Name, "/")[1] }

func badTrimExpArm(a exp.Arm) string { return strings.TrimPrefix(a.Name, "pingpong/") }

// An import under another name is still package strings (renamed.go).
func badHarnessArm(h exp.HarnessRef) bool { return strings.HasPrefix(h.Arm, "pingpong/") }

func badCheckArms(c result.Check) string {
	e, _, _ := strings.Cut(c.Arms[0], "/")
	return e
}

func badJoinExperiment(a result.Arm, rest string) string { return a.Experiment + "/" + rest }

func badJoinName(a result.Arm) string { return a.Name + "/db=memory" }

func badJoinHead(kind string) string { return "callchain/" + kind }

func badJoinSegment(key, db string) string { return key + "/db=" + db }

func badFormatName(sub, mech string, n int) string {
	return fmt.Sprintf("ring/%s/%s/n=%d", sub, mech, n)
}

func badFormatJoin(sub, mech string) string { return fmt.Sprintf("%s/%s", sub, mech) }

func badFormatParam(base string, c int) string { return fmt.Sprintf("%s/c=%d", base, c) }

func badFormatSegment(sub string, c int) string {
	return fmt.Sprintf("concurrency/%s/user/c=%d", sub, c)
}

func fineCompare(a result.Arm, names map[string]bool) bool {
	return a.Name == "pingpong/thread/futex/same-cpu" || names[a.Name]
}

func finePrint(a result.Arm) string { return fmt.Sprintf("arm %q: %s", a.Name, a.Status) }

func fineCount(done, total int) string { return fmt.Sprintf("[%d/%d]", done, total) }

func fineRate(rate string) string { return fmt.Sprintf("switched %s/s more", rate) }

func finePath(pid int) error { return fmt.Errorf("read /proc/%d/cgroup: gone", pid) }

func fineUnit(unit string) bool { return strings.HasPrefix(unit, "ns/") }

func fineKey(a result.Arm) string {
	return exp.ShortName(a) + " " + exp.MustParseArmKey(a.Name).Plan().String()
}

func fineProse(finding string, a result.Arm) bool {
	return strings.Contains(finding, exp.PlanName(a.Name))
}

func fineJoinProse(a result.Arm) string { return a.Name + ": " + a.Status }

func fineSubstrate(a result.Arm) bool { return strings.HasPrefix(a.Substrate, "py") }

func finePathJoin(pid string) string { return "/proc/" + pid + "/status" }

func fineUnits(what string) string { return "ns/" + what + "/op" }

func fineDoc() string { return "an arm run on each interpreter is named …/py=3.12" }
