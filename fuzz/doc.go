// Package fuzz holds the project's go test -fuzz targets and their seed corpora
// (testdata/fuzz/<Target>/).
package fuzz
