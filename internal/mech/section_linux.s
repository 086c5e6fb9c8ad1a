// The bodies of section_linux.go's entersyscall and exitsyscall are the
// runtime's (go:linkname); a package with an assembly file may declare a
// function without a body.
