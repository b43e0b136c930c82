package sqlite

import (
	"context"
	"fmt"

	"github.com/cpid-dev/cpid"
)

// TailSources returns every followed source of the view's cluster (of
// every cluster for a view of all), by cluster and path.
func (s *Store) TailSources(ctx context.Context) ([]cpid.TailSource, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT cluster, source, file, fingerprint, fingerprint_len, offset, line, device, inode,
		lines, records, dups, bad, possible_loss, newest_ns, committed_ns FROM tail_checkpoints
		WHERE ?1 = '' OR cluster = ?1 ORDER BY cluster, source`, s.cluster)
	if err != nil {
		return nil, fmt.Errorf("read tail checkpoints: %w", err)
	}
	defer rows.Close()
	var out []cpid.TailSource
	for rows.Next() {
		var t cpid.TailSource
		var fp []byte
		var dev, ino int64
		if err := rows.Scan(&t.Cluster, &t.Source, &t.File, &fp, &t.FingerprintLen, &t.Offset, &t.Line, &dev, &ino,
			&t.Lines, &t.Records, &t.Dups, &t.Bad, &t.PossibleLoss, &t.NewestNS, &t.CommittedNS); err != nil {
			return nil, fmt.Errorf("read tail checkpoints: %w", err)
		}
		copy(t.Fingerprint[:], fp)
		t.Device, t.Inode = uint64(dev), uint64(ino)
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read tail checkpoints: %w", err)
	}
	return out, nil
}
