"""Study storage: SQLite by default, resumable after a crash without re-spending budget (a study whose training rows
are sensitive is stored but never resumed)."""

from privtune.storage._sqlite import Study, StudyJournal, StudyLockedError, StudyStorage

__all__ = ["Study", "StudyJournal", "StudyLockedError", "StudyStorage"]
