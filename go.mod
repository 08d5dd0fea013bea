module github.com/cohort-go/cohort

go 1.26

require (
	go.yaml.in/yaml/v3 v3.0.6
	pgregory.net/rapid v1.3.0
)
