//go:build !goexperiment.jsonv2

package candidates

// extra is empty: encoding/json/v2 needs GOEXPERIMENT=jsonv2 in Go 1.26.
var extra []reader
