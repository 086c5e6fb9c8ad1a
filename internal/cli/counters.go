package cli

import "github.com/spf13/cobra"

// --counters: perf counters (hardware and software) on every participating
// thread of every arm, next to the switch counts (SPEC §2 rule 6).
func init() {
	runFlagHooks = append(runFlagHooks, func(c *cobra.Command, o *RunOptions) {
		on := new(bool)
		c.Flags().BoolVar(on, "counters", false, "open perf counters (instructions, cycles, cache and TLB misses, switches …) on every participating thread; unsupported ones say why")
		if o.Extra == nil {
			o.Extra = map[string]any{}
		}
		o.Extra["counters"] = on
	})
}

// counters reports whether --counters was given.
func (o *RunOptions) counters() bool {
	on, _ := o.Extra["counters"].(*bool)
	return on != nil && *on
}
