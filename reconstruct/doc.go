// Package reconstruct rebuilds revisions, mergelogs, the merge DAG, spans and
// timelines from decoded audit events and controller logs. It is pure
// computation over plain values.
package reconstruct
