//go:build race

package mech

// A race build has no system-call sections (section_linux.go): the race
// detector's atomics need a P, which code in a section has given up. Its
// thread and process arms wait through the runtime, one system call at a time.
const sections = false
