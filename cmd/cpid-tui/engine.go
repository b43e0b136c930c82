package main

import (
	"context"
	"strings"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/postgres"
	"github.com/cpid-dev/cpid/sqlite"
)

// store is what the commands use of an engine, seen from one cluster.
type store interface {
	cpid.RecordWriter
	cpid.DerivedStore
	cpid.ChangeReader
}

// database is an open database of either engine. This file is the only
// place that chooses an engine.
type database struct {
	view     func(cluster string) store
	clusters func(ctx context.Context) ([]string, error)
	close    func() error
}

// defaultCluster is the cluster of records written without --cluster.
const defaultCluster = cpid.DefaultCluster

// isPostgres reports whether --db names a PostgreSQL database.
func isPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// openDatabase opens --db: a postgres:// URL is a PostgreSQL database,
// anything else a SQLite file.
func openDatabase(ctx context.Context, db string) (*database, error) {
	if isPostgres(db) {
		p, err := postgres.Open(ctx, db)
		if err != nil {
			return nil, err
		}
		return &database{view: func(c string) store { return p.InCluster(c) }, clusters: p.Clusters, close: p.Close}, nil
	}
	s, err := sqlite.Open(ctx, db)
	if err != nil {
		return nil, err
	}
	return &database{view: func(c string) store { return s.InCluster(c) }, clusters: s.Clusters, close: s.Close}, nil
}

// clustersOf returns the cluster named, or every cluster of the database
// (the default one when it has none yet).
func (d *database) clustersOf(ctx context.Context, named string) ([]string, error) {
	if named != "" {
		return []string{named}, nil
	}
	cs, err := d.clusters(ctx)
	if len(cs) == 0 && err == nil {
		cs = []string{defaultCluster}
	}
	return cs, err
}
