package experiments

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/sqlop"
)

// The user's own operation in hop and concurrency: their SQLite file, a
// read-only query and its arguments (--set db=PATH --set query='…?'
// --set args=range:1..1000), measured every way the built-in lookup is,
// beside it. It is checked when the arms are built, before anything runs.

// userOpName is the op (the middle of the arm name) of the user's query.
const userOpName = "user"

func init() {
	applies := func(a exp.Arm) bool {
		return strings.HasPrefix(a.Name, "hop/") || strings.HasPrefix(a.Name, "concurrency/")
	}
	exp.RegisterArmOption("db", "hop, concurrency: your SQLite database file, opened read-only (never written); with query and args", applies)
	exp.RegisterArmOption("query", "hop, concurrency: your read-only query (SELECT or WITH) with one ? per call, run on db", applies)
	exp.RegisterArmOption("args", "hop, concurrency: the query's arguments, range:A..B or file:PATH (one value per line), one per call in turn", applies)
}

// userOp is the user's operation of the run, nil when none was given; an
// error (bad file, query or args) is a usage error: nothing has started.
func userOp(p exp.Params) (*sqlop.UserOp, error) {
	db, dbOK := p.Extra["db"]
	q, qOK := p.Extra["query"]
	a, aOK := p.Extra["args"]
	if !dbOK && !qOK && !aOK {
		return nil, nil
	}
	return sqlop.CheckUser(db, q, a)
}

// userParams marks an arm's params as the user's query: query=user, the
// file's base name and size, and how many arguments it cycles through.
func userParams(params map[string]string, u *sqlop.UserOp) {
	params["query"] = "user"
	params["db-file"] = u.Base()
	params["db-bytes"] = strconv.FormatInt(u.Size, 10)
	params["args"] = strconv.Itoa(len(u.Args))
}

// userPyArms are the CPython arms of the user's query for bench: one per
// way (how), named by name(how). The driver gets the file's path, the query
// and the arguments (as JSON); the stored params say only query=user, the
// file's name and size. A query without parameters has no CPython arms
// that run: the driver binds one argument per call.
func userPyArms(u *sqlop.UserOp, bench string, hows []string, name func(string) string) []pyArm {
	args, _ := json.Marshal(u.Args)
	var out []pyArm
	for _, how := range hows {
		params := map[string]string{"how": how, "db": "user"}
		userParams(params, u)
		pa := pyArm{key: name(how), sub: "pytask", mech: how, op: u.Op(), bench: bench, params: params,
			driverOnly: map[string]string{"path": u.Path, "query": u.Query, "args": string(args)},
			place:      "unpinned", quick: true}
		if u.Args == nil {
			pa.unsup = "the CPython arms bind one argument per call: give the query a ? and --set args"
		}
		out = append(out, pa)
	}
	return out
}
