"""pytest plugins that only the project's own tests load (fault injection)."""
