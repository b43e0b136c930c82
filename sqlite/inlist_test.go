package sqlite

import (
	"context"
	"fmt"
	"testing"
)

// TestManyIDs: the reads by a list of ids take any number of them (an
// export of every change of a large database), past SQLite's limit of
// 32766 placeholders.
func TestManyIDs(t *testing.T) {
	s := openTest(t)
	ids := make([]string, 40000)
	for i := range ids {
		ids[i] = fmt.Sprint(i)
	}
	if _, err := s.ChangesByID(context.Background(), ids); err != nil {
		t.Error(err)
	}
	if _, err := s.ChangesCarrying(context.Background(), ids); err != nil {
		t.Error(err)
	}
}
