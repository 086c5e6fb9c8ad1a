package report

// The verdict, the references and the charts read what the experiments
// declare: register them as the command does.
import _ "github.com/ctxlab/ctxlab/internal/experiments"
