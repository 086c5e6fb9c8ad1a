package namesaudit

import (
	str "strings"

	"github.com/ctxlab/ctxlab/internal/result"
)

func badRenamedImport(a result.Arm) int { return str.Index(a.Name, "/") }
