package envinfo

import "encoding/json"

// Database describes the server a run measured when it is not PostgreSQL
// (whose Postgres section has more): its product and version, the
// database, and the settings not at their compiled default.
type Database struct {
	Product  string `json:"product"` // "MariaDB"
	Version  string `json:"version"`
	Database string `json:"database"`
	// Settings are name -> value, masked as Postgres.Settings are.
	Settings map[string]string `json:"settings"`
}

// DatabaseLine is the server's product and version ("" when unknown).
func (s *Snapshot) DatabaseLine() string {
	switch {
	case s.Postgres != nil:
		return s.Postgres.Version
	case s.Database != nil:
		return s.Database.Product + " " + s.Database.Version
	}
	return ""
}

// DatabaseSettings are the server's non-default settings, whichever the
// database (nil when not recorded).
func (s *Snapshot) DatabaseSettings() map[string]string {
	switch {
	case s.Postgres != nil:
		return s.Postgres.Settings
	case s.Database != nil:
		return s.Database.Settings
	}
	return nil
}

// NamedTarget is one of an experiment's named targets (targets:): its
// name in the file and the database engine (the target driver's name,
// "postgres" or "mariadb").
type NamedTarget struct {
	Name   string `json:"name"`
	Engine string `json:"engine,omitempty"`
}

// Note is one thing a database's figures mean in its own way: a topic
// ("isolation", "transactions") and what it is on this database.
type Note struct {
	Topic string `json:"topic"`
	Text  string `json:"text"`
}

// Note topics.
const (
	NoteIsolation    = "isolation"
	NoteTransactions = "transactions"
)

// TargetOf is the named target a stored snapshot records, as
// "name (engine)" ("" when it records none).
func TargetOf(raw json.RawMessage) string {
	var s struct {
		Target *NamedTarget `json:"target"`
	}
	if json.Unmarshal(raw, &s) != nil || s.Target == nil || s.Target.Name == "" {
		return ""
	}
	if s.Target.Engine == "" {
		return s.Target.Name
	}
	return s.Target.Name + " (" + s.Target.Engine + ")"
}
