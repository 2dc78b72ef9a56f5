(** Claim C5 (docs/spec.md §3, §6.5) for the whole network: under softmax(λ), for every Maxout
    net M, shift constants with a stated margin, λ > 0 and input x,
    |Tf_λ(x)_o − M(x)_o| ≤ softmax_err M λ o, with softmax_err M λ o = softmax_err M 1 o / λ.

    The route: under softmax(λ), [construct M Rs] computes the "soft" net whose unit i returns its
    max head's average [attn (softmax_l λ) T v] of the padded pieces v_t = a_{i,pad(t)}(h̃) instead
    of max_t v_t — provided the shift constants bound the pieces along that soft trajectory
    ([construction_under_rule] of C3.v, for any rule whose weights depend only on the scores).
    Under softmax(λ) the average is within ln T/λ of the maximum ([C5_lemma_a]), and the maximum
    is Lipschitz in h with constant [lip] (the largest ℓ1 norm of a piece's weights); so the
    error grows per layer as e_ℓ = lip_ℓ·e_{ℓ−1} + ln T/λ (e_0 = 0), and the margin
    |a_ij(h^{ℓ−1}(x))| + ‖W_ij‖₁·e_{ℓ−1} ≤ R_ij ([softmax_margin]; the padded piece of every
    slot) keeps the soft trajectory inside the shifts. These are the recursion and the margin
    test of `exactform softmax` (exactform/provers/softmax.py, with a rational U ≥ ln T). *)
From Coq Require Import Reals QArith Qreals Lra Lia List Arith Bool.
From Exactform Require Import Defs Sums C1 C3 C5.
Import ListNotations.
Open Scope R_scope.

(** * Softmax(λ): the construction computes the soft net *)

Lemma softmax_rule_ext : forall lam, rule_ext (softmax_l lam).
Proof. intros lam T s s' j H Hj. unfold softmax_l. apply softmax_ext; auto. intros. rewrite H; auto. Qed.

(** The soft layer: unit i returns the softmax(λ) max head's average of its padded pieces. *)
Definition soft_layer (lam : R) (T : nat) (L : layer) (nin : nat) (h : nat -> R) : nat -> R :=
  fun i => attn (softmax_l lam) T (fun t => piece L nin h i (pad (rank L i) t)).

Lemma soft_layer_step_ok : forall lam T, step_ok (softmax_l lam) T (soft_layer lam T).
Proof. intros. intros L nin h i _ _. reflexivity. Qed.

(** * Softmax(λ): the error through depth *)

(** [lip L nin]: the largest ℓ1 norm of a piece's weights, a Lipschitz constant of every
    piece in the ∞-norm. *)
Definition lip (L : layer) (nin : nat) : R :=
  vmax (units L) (fun i => vmax (rank L i) (fun j => rsum nin (fun c => Rabs (Q2R (wt L i j c))))).

(** e_ℓ = lip_ℓ·e_{ℓ−1} + ln T/λ, from e. *)
Fixpoint err_layers (T : nat) (lam : R) (nin : nat) (ls : list layer) (e : R) : R :=
  match ls with [] => e | L :: ls => err_layers T lam (units L) ls (lip L nin * e + ln (INR T) / lam) end.

(** [norm1 L nin i j] = ‖W_ij‖₁. *)
Definition norm1 (L : layer) (nin i j : nat) : R := rsum nin (fun c => Rabs (Q2R (wt L i j c))).

(** The margin: along the exact trajectory, |a_ij(h^{ℓ−1})| + ‖W_ij‖₁·e_{ℓ−1} ≤ R_ij for the
    padded piece of every slot. *)
Fixpoint margin_hold (T : nat) (Rs : shifts) (lam : R) (l nin : nat) (ls : list layer) (h : nat -> R) (e : R) : Prop :=
  match ls with
  | [] => True
  | L :: ls => (forall i j, (i < units L)%nat -> (j < T)%nat ->
                  Rabs (piece L nin h i (pad (rank L i) j)) + norm1 L nin i (pad (rank L i) j) * e <= Q2R (Rs l i j))
               /\ margin_hold T Rs lam (S l) (units L) ls (layer_eval L nin h) (lip L nin * e + ln (INR T) / lam)
  end.

Definition softmax_margin (M : maxout) (Rs : shifts) (lam : R) (x : nat -> R) : Prop :=
  margin_hold (max_rank M) Rs lam 0 (input_dim M) (layers M) x 0.

(** The bound on output o: Σ_c |A_oc| · e_L. *)
Definition softmax_err (M : maxout) (lam : R) (o : nat) : R :=
  rsum (last_width M) (fun c => Rabs (Q2R (rd_w M o c))) * err_layers (max_rank M) lam (input_dim M) (layers M) 0.

Lemma rsum_abs : forall n f, Rabs (rsum n f) <= rsum n (fun i => Rabs (f i)).
Proof.
  induction n; intros; simpl; [rewrite Rabs_R0; lra | ].
  eapply Rle_trans; [apply Rabs_triang | ]. pose proof (IHn f). lra.
Qed.

Lemma vmax_nonneg : forall T f, (forall j, (j < T)%nat -> 0 <= f j) -> 0 <= vmax T f.
Proof. intros [|n] f H; [simpl; lra | ]. eapply Rle_trans; [apply (H O); lia | apply vmax_ge; lia]. Qed.

Lemma lip_nonneg : forall L nin, 0 <= lip L nin.
Proof.
  intros. unfold lip. apply vmax_nonneg. intros. apply vmax_nonneg. intros.
  apply rsum_nonneg. intros. apply Rabs_pos.
Qed.

Lemma ln_T_nonneg : forall T, (1 <= T)%nat -> 0 <= ln (INR T).
Proof.
  intros. rewrite <- ln_1. destruct (Nat.eq_dec T 1) as [->|Hne]; [simpl; lra | ].
  left. apply ln_increasing; [lra | ]. replace 1 with (INR 1) by reflexivity. apply lt_INR. lia.
Qed.

Lemma dot_diff : forall n a h h', Rabs (dot n a h - dot n a h') <= rsum n (fun c => Rabs (Q2R (a c))) * vmax n (fun c => Rabs (h c - h' c)).
Proof.
  intros. unfold dot. rewrite <- rsum_minus. eapply Rle_trans; [apply rsum_abs | ].
  rewrite <- rsum_scal_r. apply rsum_le. intros c Hc.
  replace (Q2R (a c) * h c - Q2R (a c) * h' c) with (Q2R (a c) * (h c - h' c)) by ring.
  rewrite Rabs_mult. apply Rmult_le_compat_l; [apply Rabs_pos | ].
  apply (vmax_ge n (fun c => Rabs (h c - h' c))). auto.
Qed.

Lemma vmax_diff_le : forall n (h h' : nat -> R) e, 0 <= e -> (forall c, (c < n)%nat -> Rabs (h c - h' c) <= e) ->
  vmax n (fun c => Rabs (h c - h' c)) <= e.
Proof. intros [|n] h h' e He H; [simpl; lra | ]. apply vmax_le; [lia | auto]. Qed.

(** A piece moves by at most ‖W_ij‖₁·e, and so by at most lip·e, when its input moves by at most e. *)
Lemma piece_moves_norm1 : forall L nin h h' i j e, 0 <= e ->
  (forall c, (c < nin)%nat -> Rabs (h c - h' c) <= e) ->
  Rabs (piece L nin h i j - piece L nin h' i j) <= norm1 L nin i j * e.
Proof.
  intros. unfold piece. replace (dot nin (wt L i j) h + Q2R (bs L i j) - (dot nin (wt L i j) h' + Q2R (bs L i j)))
    with (dot nin (wt L i j) h - dot nin (wt L i j) h') by ring.
  eapply Rle_trans; [apply dot_diff | ]. apply Rmult_le_compat_l; [apply rsum_nonneg; intros; apply Rabs_pos | ].
  apply vmax_diff_le; auto.
Qed.

(** A piece moves by at most lip·e when its input moves by at most e. *)
Lemma piece_moves : forall L nin h h' i j e, (i < units L)%nat -> (j < rank L i)%nat -> 0 <= e ->
  (forall c, (c < nin)%nat -> Rabs (h c - h' c) <= e) ->
  Rabs (piece L nin h i j - piece L nin h' i j) <= lip L nin * e.
Proof.
  intros L nin h h' i j e Hi Hj He0' He.
  assert (He0 : 0 <= vmax nin (fun c => Rabs (h c - h' c))) by (apply vmax_nonneg; intros; apply Rabs_pos).
  assert (Hv : vmax nin (fun c => Rabs (h c - h' c)) <= e).
  { destruct nin as [|n]; [simpl; lra | ].
    apply vmax_le; [lia | auto]. }
  unfold piece. replace (dot nin (wt L i j) h + Q2R (bs L i j) - (dot nin (wt L i j) h' + Q2R (bs L i j)))
    with (dot nin (wt L i j) h - dot nin (wt L i j) h') by ring.
  eapply Rle_trans; [apply dot_diff | ].
  assert (Hl : rsum nin (fun c => Rabs (Q2R (wt L i j c))) <= lip L nin).
  { unfold lip. eapply Rle_trans; [ | apply (vmax_ge (units L) _ i Hi)].
    apply (vmax_ge (rank L i) (fun j => rsum nin (fun c => Rabs (Q2R (wt L i j c)))) j Hj). }
  apply Rmult_le_compat; auto. apply rsum_nonneg. intros. apply Rabs_pos.
Qed.

(** Under softmax(λ) a max head returns its values' maximum less at most ln T/λ. *)
Lemma attn_softmax : forall T v lam, (1 <= T)%nat -> 0 < lam ->
  0 <= vmax T v - attn (softmax_l lam) T v <= ln (INR T) / lam.
Proof.
  intros T v lam HT Hl. unfold attn. rewrite (rsum_ext T _ (fun j => softmax_l lam T v j * v j)).
  - apply C5_lemma_a; auto.
  - intros j Hj. f_equal. unfold softmax_l. apply softmax_ext; auto. intros. ring.
Qed.

Lemma div_nonneg : forall a b, 0 <= a -> 0 < b -> 0 <= a / b.
Proof. intros. unfold Rdiv. apply Rmult_le_pos; auto. left. apply Rinv_0_lt_compat; auto. Qed.

Lemma pad_lt : forall k j, (1 <= k)%nat -> (pad k j < k)%nat.
Proof. intros. unfold pad. lia. Qed.

(** One layer: the soft unit at h' against the exact unit at h, ‖h' − h‖ ≤ e. *)
Lemma soft_layer_err : forall T lam L nin h h' e i, (1 <= T)%nat -> 0 < lam -> 0 <= e ->
  (i < units L)%nat -> (1 <= rank L i <= T)%nat ->
  (forall c, (c < nin)%nat -> Rabs (h' c - h c) <= e) ->
  Rabs (soft_layer lam T L nin h' i - layer_eval L nin h i) <= lip L nin * e + ln (INR T) / lam.
Proof.
  intros T lam L nin h h' e i HT Hl He Hi Hr Hh. unfold soft_layer, layer_eval.
  set (v' := fun t => piece L nin h' i (pad (rank L i) t)).
  rewrite <- (vmax_pad T (rank L i) (piece L nin h i)) by auto.
  set (v := fun t => piece L nin h i (pad (rank L i) t)).
  destruct (attn_softmax T v' lam HT Hl) as [A1 A2].
  pose proof (vmax_lipschitz T v' v HT) as HV.
  assert (HW : vmax T (fun j => Rabs (v' j - v j)) <= lip L nin * e).
  { apply vmax_le; auto. intros j Hj. unfold v', v. apply piece_moves; auto. apply pad_lt. lia. }
  apply abs_le_inv in HV. apply Rabs_le. lra.
Qed.

Lemma err_layers_nonneg : forall T lam ls nin e, (1 <= T)%nat -> 0 < lam -> 0 <= e -> 0 <= err_layers T lam nin ls e.
Proof.
  induction ls as [|L ls IH]; intros nin e HT Hl He; simpl; auto. apply IH; auto.
  pose proof (lip_nonneg L nin). pose proof (ln_T_nonneg T HT).
  apply Rplus_le_le_0_compat; [apply Rmult_le_pos; auto | apply div_nonneg; auto].
Qed.

(** Through every layer: the margin keeps the soft trajectory inside the shifts, and the soft
    trajectory stays within e_ℓ of the exact one. *)
Lemma soft_trajectory : forall T Rs lam, (1 <= T)%nat -> 0 < lam ->
  forall ls l nin h h' e, 0 <= e ->
  (forall L, In L ls -> forall i, (i < units L)%nat -> (1 <= rank L i <= T)%nat) ->
  (forall c, (c < nin)%nat -> Rabs (h' c - h c) <= e) ->
  margin_hold T Rs lam l nin ls h e ->
  shifts_along T Rs (soft_layer lam T) l nin ls h' /\
  forall c, (c < last (nin :: map units ls) O)%nat ->
    Rabs (run (soft_layer lam T) ls nin h' c - layers_eval ls nin h c) <= err_layers T lam nin ls e.
Proof.
  intros T Rs lam HT Hl. induction ls as [|L ls IH]; intros l nin h h' e He Hr Hh Hm.
  - split; [exact I | exact Hh].
  - destruct Hm as [Hm Hm']. cbn [shifts_along run layers_eval err_layers].
    assert (He' : 0 <= lip L nin * e + ln (INR T) / lam).
    { pose proof (lip_nonneg L nin). pose proof (ln_T_nonneg T HT).
      apply Rplus_le_le_0_compat; [apply Rmult_le_pos; auto | apply div_nonneg; auto]. }
    assert (Hh' : forall c, (c < units L)%nat ->
              Rabs (soft_layer lam T L nin h' c - layer_eval L nin h c) <= lip L nin * e + ln (INR T) / lam).
    { intros c Hc. apply soft_layer_err; auto. apply Hr; auto. left; reflexivity. }
    destruct (IH (S l) (units L) (layer_eval L nin h) (soft_layer lam T L nin h')
                 (lip L nin * e + ln (INR T) / lam) He' (fun L' HL' => Hr L' (or_intror HL')) Hh' Hm') as [A B].
    split; [split; [ | exact A] | exact B].
    intros i j Hi Hj. pose proof (Hm i j Hi Hj) as Hmij.
    assert (HP : Rabs (piece L nin h' i (pad (rank L i) j) - piece L nin h i (pad (rank L i) j))
                 <= norm1 L nin i (pad (rank L i) j) * e).
    { apply piece_moves_norm1; auto. }
    pose proof (Rabs_triang (piece L nin h' i (pad (rank L i) j) - piece L nin h i (pad (rank L i) j))
                            (piece L nin h i (pad (rank L i) j))) as Ht.
    replace (piece L nin h' i (pad (rank L i) j) - piece L nin h i (pad (rank L i) j) + piece L nin h i (pad (rank L i) j))
      with (piece L nin h' i (pad (rank L i) j)) in Ht by ring.
    lra.
Qed.

(** * The theorem *)

Theorem C5_network : forall (M : maxout) (Rs : shifts) (lam : R) (x : nat -> R),
  well_formed M -> 0 < lam -> softmax_margin M Rs lam x ->
  forall o, Rabs (tf_eval (softmax_l lam) (construct M Rs) x o - maxout_eval M x o) <= softmax_err M lam o.
Proof.
  intros M Rs lam x Hwf Hl Hm o.
  destruct (wf_facts M Hwf) as [HT [_ Hr]].
  assert (H0 : forall c, (c < input_dim M)%nat -> Rabs (x c - x c) <= 0).
  { intros. replace (x c - x c) with 0 by ring. rewrite Rabs_R0. lra. }
  destruct (soft_trajectory (max_rank M) Rs lam HT Hl (layers M) 0 (input_dim M) x x 0 (Rle_refl 0)
              (fun L HL => proj2 (Hr L HL)) H0 Hm) as [Hs He].
  rewrite (construction_under_rule (softmax_l lam) (soft_layer lam (max_rank M)) M Rs x (softmax_rule_ext lam)
            (soft_layer_step_ok lam (max_rank M)) Hwf Hs o).
  unfold maxout_eval, softmax_err.
  set (E := err_layers (max_rank M) lam (input_dim M) (layers M) 0).
  assert (HE : 0 <= E) by (apply err_layers_nonneg; auto; lra).
  match goal with |- Rabs (?a + ?b - (?c + ?b)) <= _ => replace (a + b - (c + b)) with (a - c) by ring end.
  eapply Rle_trans; [apply dot_diff | ]. apply Rmult_le_compat_l; [apply rsum_nonneg; intros; apply Rabs_pos | ].
  destruct (last_width M) as [|n] eqn:En; [simpl; auto | ].
  apply vmax_le; [lia | ]. intros c Hc. apply He.
  change (last (input_dim M :: map units (layers M)) O) with (last_width M). rewrite En. exact Hc.
Qed.

Lemma err_layers_scale : forall T lam ls nin a, 0 < lam ->
  err_layers T lam nin ls (a / lam) = err_layers T 1 nin ls a / lam.
Proof.
  induction ls as [|L ls IH]; intros nin a Hl; simpl; auto.
  replace (lip L nin * (a / lam) + ln (INR T) / lam) with ((lip L nin * a + ln (INR T) / 1) / lam) by (field; lra).
  apply IH; auto.
Qed.

(** The bound is explicit and decreases as 1/λ: err(M, λ) = err(M, 1)/λ. *)
Theorem C5_err_scale : forall (M : maxout) (lam : R) (o : nat), 0 < lam ->
  softmax_err M lam o = softmax_err M 1 o / lam.
Proof.
  intros. unfold softmax_err.
  replace (err_layers (max_rank M) lam (input_dim M) (layers M) 0)
    with (err_layers (max_rank M) lam (input_dim M) (layers M) (0 / lam)) by (f_equal; field; lra).
  rewrite err_layers_scale by auto. field. lra.
Qed.

(** Hence for every ε > 0: every λ ≥ err(M, 1)/ε that keeps the margin gives |Tf_λ − M| ≤ ε. *)
Theorem C5_network_eps : forall (M : maxout) (Rs : shifts) (lam eps : R) (x : nat -> R) (o : nat),
  well_formed M -> 0 < lam -> softmax_err M 1 o <= eps * lam -> softmax_margin M Rs lam x ->
  Rabs (tf_eval (softmax_l lam) (construct M Rs) x o - maxout_eval M x o) <= eps.
Proof.
  intros. eapply Rle_trans; [apply C5_network; auto | ]. rewrite C5_err_scale by auto.
  apply Rmult_le_reg_r with lam; auto. unfold Rdiv. rewrite Rmult_assoc, Rinv_l by lra. lra.
Qed.

(** The margin is easier to meet for a smaller error and a larger λ. *)
Lemma margin_hold_mono : forall T Rs lam0 lam, (1 <= T)%nat -> 0 < lam0 <= lam ->
  forall ls l nin h e e', 0 <= e' <= e ->
  margin_hold T Rs lam0 l nin ls h e -> margin_hold T Rs lam l nin ls h e'.
Proof.
  intros T Rs lam0 lam HT Hl. induction ls as [|L ls IH]; intros l nin h e e' He Hm; [exact I | ].
  destruct Hm as [Hm Hm']. pose proof (lip_nonneg L nin) as Hlip. pose proof (ln_T_nonneg T HT) as Hln.
  split.
  - intros i j Hi Hj. pose proof (Hm i j Hi Hj).
    assert (norm1 L nin i (pad (rank L i) j) * e' <= norm1 L nin i (pad (rank L i) j) * e).
    { apply Rmult_le_compat_l; [apply rsum_nonneg; intros; apply Rabs_pos | lra]. }
    lra.
  - apply (IH (S l) (units L) (layer_eval L nin h) (lip L nin * e + ln (INR T) / lam0)); auto.
    assert (ln (INR T) / lam <= ln (INR T) / lam0).
    { unfold Rdiv. apply Rmult_le_compat_l; auto. apply Rinv_le_contravar; lra. }
    assert (lip L nin * e' <= lip L nin * e) by (apply Rmult_le_compat_l; lra).
    split; [apply Rplus_le_le_0_compat; [apply Rmult_le_pos | apply div_nonneg] | ]; lra.
Qed.

(** For every ε > 0 an explicit λ(ε): once the margin holds at some λ0, every
    λ ≥ max(λ0, err(M, 1)/ε) gives |Tf_λ(x)_o − M(x)_o| ≤ ε. *)
Theorem C5_network_lambda : forall (M : maxout) (Rs : shifts) (lam0 eps : R) (x : nat -> R) (o : nat),
  well_formed M -> 0 < lam0 -> 0 < eps -> softmax_margin M Rs lam0 x ->
  forall lam, Rmax lam0 (softmax_err M 1 o / eps) <= lam ->
  Rabs (tf_eval (softmax_l lam) (construct M Rs) x o - maxout_eval M x o) <= eps.
Proof.
  intros M Rs lam0 eps x o Hwf Hl0 He Hm lam Hlam.
  pose proof (Rmax_l lam0 (softmax_err M 1 o / eps)). pose proof (Rmax_r lam0 (softmax_err M 1 o / eps)).
  destruct (wf_facts M Hwf) as [HT _].
  apply C5_network_eps; [auto | lra | | ].
  - apply Rmult_le_reg_r with (/ eps); [apply Rinv_0_lt_compat; auto | ].
    replace (eps * lam * / eps) with lam by (field; lra). unfold Rdiv in *. lra.
  - unfold softmax_margin in *. apply (margin_hold_mono _ _ lam0 lam HT ltac:(lra) _ _ _ _ 0 0); auto; lra.
Qed.
