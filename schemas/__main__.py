"""``python -m schemas``: regenerate the JSON Schema files from the pydantic models."""

from schemas.json_schema import write_all

if __name__ == "__main__":
    for path in write_all():
        print(f"wrote {path}")
