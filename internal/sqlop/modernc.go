package sqlop

import _ "modernc.org/sqlite" // registers database/sql driver "sqlite"

func init() {
	registerSQL(sqlDriver{name: "modernc", sqlName: "sqlite", about: "modernc.org/sqlite (pure Go, SQLite translated from C)"}, "")
}
