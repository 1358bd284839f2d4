"""Operations: metrics, budgets, health of the setup."""
