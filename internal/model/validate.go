package model

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"sync"

	"github.com/go-playground/validator/v10"
)

// validatable is implemented by inputs with rules that struct tags cannot say.
type validatable interface{ Validate() error }

// Check runs an input's struct-tag rules, then its own Validate, if any. The API
// and import call it alike, so a value refused on one path is refused on both.
func Check(v any) error {
	if c, ok := v.(selfChecked); ok {
		return c.(validatable).Validate()
	}
	if err := structValidator().Struct(v); err != nil {
		return validationError(err)
	}
	if c, ok := v.(validatable); ok {
		return c.Validate()
	}
	return nil
}

// structValidator is built once: it caches what it learns of each type.
var structValidator = sync.OnceValue(newValidator)

func newValidator() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	// Report fields by their JSON names, as the client wrote them.
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			return ""
		}
		return name
	})
	_ = v.RegisterValidation("clientid", func(fl validator.FieldLevel) bool {
		return ValidClientID(fl.Field().String())
	})
	return v
}

// validationError turns validator's errors into one 422 naming every bad field.
func validationError(err error) error {
	var verrs validator.ValidationErrors
	if !errors.As(err, &verrs) {
		return Internal(err)
	}
	fields := make([]FieldError, 0, len(verrs))
	for _, fe := range verrs {
		fields = append(fields, FieldError{Field: fieldPath(fe.Namespace()), Message: fieldMessage(fe)})
	}
	return Invalid(fields...)
}

// fieldPath drops the Go type name that validator puts first: "AppendBatch.messages[2].role" → "messages[2].role".
func fieldPath(ns string) string {
	_, rest, ok := strings.Cut(ns, ".")
	if !ok {
		return ns
	}
	return rest
}

func fieldMessage(fe validator.FieldError) string {
	p := fe.Param()
	kind := fe.Kind()
	switch fe.Tag() {
	case "required":
		return "is required"
	case "required_if":
		f, val, _ := strings.Cut(p, " ")
		return fmt.Sprintf("is required when %s is %s", strings.ToLower(f), val)
	case "excluded_unless":
		f, val, _ := strings.Cut(p, " ")
		return fmt.Sprintf("is only allowed when %s is %s", strings.ToLower(f), val)
	case "oneof":
		return "must be one of: " + strings.ReplaceAll(p, " ", ", ")
	case "min", "max":
		word := map[string]string{"min": "at least", "max": "at most"}[fe.Tag()]
		switch kind {
		case reflect.String:
			return fmt.Sprintf("must be %s %s characters long", word, p)
		case reflect.Slice, reflect.Map, reflect.Array:
			return fmt.Sprintf("must have %s %s items", word, p)
		}
		return fmt.Sprintf("must be %s %s", word, p)
	case "gte":
		return "must be greater than or equal to " + p
	case "lte":
		return "must be at most " + p
	case "json":
		return "must be a string that holds valid JSON"
	case "required_without":
		return "is required"
	case "clientid":
		return "must be 1 to 128 characters of A-Z a-z 0-9 _ . : -"
	}
	return "is invalid (" + fe.Tag() + ")"
}
