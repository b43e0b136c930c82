package sqlite

// auditLine makes a RequestResponse- or Request-level audit event line.
