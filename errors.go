package cpid

import (
	"errors"
	"fmt"
)

// Error codes of the read service: what a caller may branch on (the CLI
// turns ENOTFOUND into a hint saying where the ids are listed), in
// benbjohnson/wtf's manner.
const (
	// ENOTFOUND: what was named (a change, a CPID) is not in the database.
	ENOTFOUND = "not_found"
	// EINVALID: the query asks for what cannot be (an unknown sort).
	EINVALID = "invalid"
	// EINTERNAL: anything else (the database failed).
	EINTERNAL = "internal"
)

// Error is an error of the read service with a code: its Message says
// what, without any hint of a front end.
type Error struct {
	Code    string
	Message string
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error of code with a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err's *Error, EINTERNAL when it wraps
// none, "" for nil.
func ErrorCode(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the message of err's *Error, else err's text.
func ErrorMessage(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Message
	}
	return err.Error()
}
