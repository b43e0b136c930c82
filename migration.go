package cpid

import (
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

// Migration is one schema change of an engine: an embedded NNNN_name.sql
// file, applied in version order and recorded in schema_migrations.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// ReadMigrations reads the NNNN_name.sql files of dir in fsys, sorted by
// version; a misnamed file or two files of one version are an error.
func ReadMigrations(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(name, ".sql") {
			return nil, fmt.Errorf("migration %s: name must be NNNN_name.sql", name)
		}
		b, err := fs.ReadFile(fsys, dir+"/"+name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i := 1; i < len(ms); i++ {
		if ms[i].Version == ms[i-1].Version {
			return nil, fmt.Errorf("migrations %s and %s share a version", ms[i-1].Name, ms[i].Name)
		}
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("no migrations in %s", dir)
	}
	return ms, nil
}

// NewerSchemaError is the error of opening a database whose schema is
// newer than this program knows.
func NewerSchemaError(have, know int) error {
	return fmt.Errorf("database has schema version %d, newer than this cpid-tui knows (%d): upgrade cpid-tui", have, know)
}

// CheckApplied fails when the migrations recorded in schema_migrations
// (applied: version to name) are not a part of ms: a version past the
// newest of ms (NewerSchemaError: a newer cpid-tui made the database), or
// one whose name is not this program's migration of that version: another
// build of cpid-tui (a branch's, one from before a migration was
// renumbered) applied a different change under the same number, so the
// schema is not the one this program's migrations make, and migrating on
// would skip this program's. Readers (CheckSchema) and writers, before
// they migrate, check it.
func CheckApplied(ms []Migration, applied map[int]string) error {
	latest, newest := ms[len(ms)-1].Version, 0
	for v := range applied {
		newest = max(newest, v)
	}
	if newest > latest {
		return NewerSchemaError(newest, latest)
	}
	byVersion := make(map[int]string, len(ms))
	for _, m := range ms {
		byVersion[m.Version] = m.Name
	}
	var bad []int
	for v, name := range applied {
		if name != byVersion[v] {
			bad = append(bad, v)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Ints(bad)
	v := bad[0]
	mine := byVersion[v]
	if mine == "" {
		mine = "no migration of that version"
	}
	return fmt.Errorf("schema_migrations holds version %d as %s, where this cpid-tui has %s (%d such versions): "+
		"another build of cpid-tui migrated this database; open it with that build, or ingest the logs into a new database with this one",
		v, applied[v], mine, len(bad))
}

// CheckSchema is what a reader checks before it reads a database it must
// not migrate: applied (the versions in schema_migrations, with their
// names) must hold every migration of ms, no more, each by its name
// (CheckApplied). The error says which version is needed and how to get it.
func CheckSchema(ms []Migration, applied map[int]string) error {
	latest := ms[len(ms)-1].Version
	if len(applied) == 0 {
		return fmt.Errorf("no cpid schema in it (cpid-tui ingest creates one)")
	}
	if err := CheckApplied(ms, applied); err != nil {
		return err
	}
	have := 0
	for v := range applied {
		have = max(have, v)
	}
	var missing []string
	for _, m := range ms {
		if _, ok := applied[m.Version]; !ok {
			missing = append(missing, m.Name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("schema version %d lacks %s: this cpid-tui reads schema version %d; "+
		"run cpid-tui reconstruct (or ingest) on it to migrate it, reading commands never do",
		have, strings.Join(missing, ", "), latest)
}
