"""A checkpoint read and edited, locally or in object storage: shared by drivers and app/."""
