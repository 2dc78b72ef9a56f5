(** The hypothesis and the bound of [C5_network] decided in Coq for a given net, shift constants,
    box B, λ and ε (rationals): the margins over the box by the interval arithmetic of Bounds.v,
    e_ℓ over Q with a rational U whose [exp_lower] (a lower bound on e^U) reaches T, so
    U ≥ ln T, and Σ_c |A_oc|·e_L ≤ ε. [C5_checked]: the boolean [softmax_ok] gives
    |Tf_λ(x)_o − M(x)_o| ≤ ε on the whole box. *)
From Coq Require Import Reals QArith Qreals Lra Lia List Arith Bool ZArith.
From Exactform Require Import Defs Sums C3 C5 Bounds C5Net.
Import ListNotations.

(** * A certified lower bound on e^U *)

Open Scope Q_scope.

(** ⌊q·k⌋/k ≤ q. *)
Definition qfloor (k : positive) (q : Q) : Q := Qmake (Z.div (Qnum q * Zpos k) (Zpos (Qden q))) k.

Fixpoint sq_iter (m : nat) (k : positive) (q : Q) : Q :=
  match m with O => q | S m => sq_iter m k (qfloor k (q * q)) end.

(** (1 + U/2^m)^(2^m) by m squarings, each rounded down to a multiple of 2^-b: ≤ e^U. *)
Definition exp_lower (U : Q) (m b : nat) : Q :=
  sq_iter m (Pos.pow 2 (Pos.of_nat b)) (1 + U / inject_Z (2 ^ Z.of_nat m)).

Open Scope R_scope.

Lemma qfloor_le : forall k q, Q2R (qfloor k q) <= Q2R q.
Proof.
  intros. apply Qle_Rle. unfold qfloor, Qle; simpl.
  pose proof (Z.mul_div_le (Qnum q * Zpos k) (Zpos (Qden q)) ltac:(lia)). lia.
Qed.

Lemma qfloor_nonneg : forall k q, 0 <= Q2R q -> 0 <= Q2R (qfloor k q).
Proof.
  intros k q H. replace 0 with (Q2R 0) by (unfold Q2R; simpl; ring). apply Qle_Rle.
  assert (Hq : (0 <= q)%Q) by (apply Rle_Qle; unfold Q2R at 1; simpl; lra).
  unfold qfloor, Qle in *; simpl in *. rewrite Z.mul_1_r.
  apply Z.div_pos; [ | lia]. apply Z.mul_nonneg_nonneg; lia.
Qed.

Lemma exp_half : forall y, exp (y / 2) * exp (y / 2) = exp y.
Proof. intros. rewrite <- exp_plus. f_equal. field. Qed.

Lemma sq_iter_le : forall m k q y, 0 <= Q2R q -> Q2R q <= exp (y / 2 ^ m) -> Q2R (sq_iter m k q) <= exp y.
Proof.
  induction m as [|m IH]; intros k q y H0 H1; simpl.
  - simpl in H1. replace (y / 1) with y in H1 by field. auto.
  - apply IH.
    + apply qfloor_nonneg. rewrite Q2R_mult. apply Rmult_le_pos; auto.
    + eapply Rle_trans; [apply qfloor_le | ]. rewrite Q2R_mult.
      rewrite <- exp_half. pose proof (pow_lt 2 m ltac:(lra)) as HP.
      replace (y / 2 ^ m / 2) with (y / (2 * 2 ^ m)) by (field; lra).
      apply Rmult_le_compat; auto.
Qed.

Lemma Q2R_two_pow : forall m, Q2R (inject_Z (2 ^ Z.of_nat m)) = 2 ^ m.
Proof. intros. unfold Q2R; simpl. rewrite pow_IZR. field. Qed.

Lemma exp_lower_le : forall U m b, (0 <= U)%Q -> Q2R (exp_lower U m b) <= exp (Q2R U).
Proof.
  intros U m b HU. unfold exp_lower. apply Qle_Rle in HU. replace (Q2R 0) with 0 in HU by (unfold Q2R; simpl; ring).
  pose proof (pow_lt 2 m ltac:(lra)) as HP.
  assert (E : Q2R (1 + U / inject_Z (2 ^ Z.of_nat m)) = 1 + Q2R U / 2 ^ m).
  { rewrite Q2R_plus, Q2R_div, Q2R_two_pow.
    - unfold Q2R at 1; simpl. field. lra.
    - intro H. apply Qeq_eqR in H. rewrite Q2R_two_pow in H. unfold Q2R in H; simpl in H. lra. }
  apply sq_iter_le; rewrite E.
  - assert (0 <= Q2R U / 2 ^ m) by (unfold Rdiv; apply Rmult_le_pos; [lra | left; apply Rinv_0_lt_compat; lra]). lra.
  - apply exp_ineq1_le.
Qed.

(** U ≥ ln T when [exp_lower U m b] ≥ T. *)
Lemma ln_le_of_exp_lower : forall T U m b, (1 <= T)%nat -> (0 <= U)%Q ->
  (inject_Z (Z.of_nat T) <= exp_lower U m b)%Q -> ln (INR T) <= Q2R U.
Proof.
  intros T U m b HT HU H. apply Qle_Rle in H.
  assert (ET : Q2R (inject_Z (Z.of_nat T)) = INR T) by (unfold Q2R; simpl; rewrite INR_IZR_INZ; field).
  rewrite ET in H. rewrite <- (ln_exp (Q2R U)). apply ln_le_mono.
  - apply lt_0_INR. lia.
  - eapply Rle_trans; [exact H | apply exp_lower_le; auto].
Qed.

(** * Margins and the bound over Q *)

Open Scope Q_scope.

Definition qabs (q : Q) : Q := if Qle_bool 0 q then q else - q.
Definition qnorm1 (L : layer) (nin i j : nat) : Q := qsum nin (fun c => qabs (wt L i j c)).
Definition qlip (L : layer) (nin : nat) : Q := qvmax (units L) (fun i => qvmax (rank L i) (fun j => qnorm1 L nin i j)).

(** Per layer, with e the error entering it and [step] ≥ ln T/λ: every slot's margin over the
    box, then the next layer with lip·e + step. *)
Fixpoint margins_ok (T l nin : nat) (ls : list layer) (Rs : shifts) (B : box) (step e : Q) : bool :=
  match ls with
  | [] => true
  | L :: ls => forallb (fun i => forallb (fun j =>
                 Qle_bool (piece_mag L nin B i (pad (rank L i) j) + qnorm1 L nin i (pad (rank L i) j) * e) (Rs l i j))
                 (seq 0 T)) (seq 0 (units L))
               && margins_ok T (S l) (units L) ls Rs (next_box L nin B) step (Qred (qlip L nin * e + step))
  end.

Fixpoint qerr (nin : nat) (ls : list layer) (step e : Q) : Q :=
  match ls with [] => e | L :: ls => qerr (units L) ls step (Qred (qlip L nin * e + step)) end.

(** The checker: the box has one interval per input, λ > 0, U ≥ 0 with e^U ≥ [exp_lower U m b] ≥ T,
    every margin, and every output's Σ_c |A_oc|·e_L ≤ ε. *)
Definition softmax_ok (M : maxout) (Rs : shifts) (B : box) (U lam eps : Q) (m b : nat) : bool :=
  let T := max_rank M in let step := Qred (U / lam) in
  (length B =? input_dim M)%nat && negb (Qle_bool lam 0) && Qle_bool 0 U
  && Qle_bool (inject_Z (Z.of_nat T)) (exp_lower U m b)
  && margins_ok T 0 (input_dim M) (layers M) Rs B step 0
  && forallb (fun o => Qle_bool (qsum (last_width M) (fun c => qabs (rd_w M o c)) * qerr (input_dim M) (layers M) step 0) eps)
       (seq 0 (outputs M)).

(** * Soundness *)

Open Scope R_scope.

Lemma Q2R_qabs : forall q, Q2R (qabs q) = Rabs (Q2R q).
Proof.
  intros. unfold qabs. destruct (Qle_bool 0 q) eqn:E.
  - apply Qle_bool_iff, Qle_Rle in E. rewrite Q2R0 in E. rewrite Rabs_right; lra.
  - assert (~ (0 <= q)%Q) by (intro H; apply Qle_bool_iff in H; congruence).
    apply Qnot_le_lt, Qlt_Rlt in H. rewrite Q2R0 in H. rewrite Q2R_opp, Rabs_left; lra.
Qed.

Lemma Q2R_qnorm1 : forall L nin i j, Q2R (qnorm1 L nin i j) = norm1 L nin i j.
Proof. intros. unfold qnorm1, norm1. rewrite Q2R_qsum. apply rsum_ext. intros. apply Q2R_qabs. Qed.

Lemma Q2R_qlip : forall L nin, Q2R (qlip L nin) = lip L nin.
Proof.
  intros. unfold qlip, lip. rewrite Q2R_qvmax. apply vmax_ext. intros. rewrite Q2R_qvmax.
  apply vmax_ext. intros. apply Q2R_qnorm1.
Qed.

Lemma margins_sound : forall T Rs lam step, (1 <= T)%nat -> 0 < lam -> ln (INR T) / lam <= Q2R step ->
  forall ls l nin B h e er, margins_ok T l nin ls Rs B step e = true -> in_box nin B h ->
  0 <= er <= Q2R e -> margin_hold T Rs lam l nin ls h er.
Proof.
  intros T Rs lam step HT Hl Hstep. induction ls as [|L ls IH]; intros l nin B h e er Hok Hh He; [exact I | ].
  cbn [margins_ok] in Hok. apply andb_prop in Hok. destruct Hok as [H1 H2]. split.
  - intros i j Hi Hj.
    pose proof (forallb_seq _ _ (forallb_seq _ _ H1 i Hi) j Hj) as Hij. cbv beta in Hij.
    apply Qle_bool_iff, Qle_Rle in Hij. rewrite Q2R_plus, Q2R_mult, Q2R_qnorm1 in Hij.
    pose proof (piece_abs B L nin h i (pad (rank L i) j) Hh).
    assert (0 <= norm1 L nin i (pad (rank L i) j)) by (apply rsum_nonneg; intros; apply Rabs_pos).
    assert (norm1 L nin i (pad (rank L i) j) * er <= norm1 L nin i (pad (rank L i) j) * Q2R e)
      by (apply Rmult_le_compat_l; lra).
    lra.
  - apply (IH (S l) (units L) (next_box L nin B) (layer_eval L nin h) (Qred (qlip L nin * e + step))); auto.
    + apply next_box_sound; auto.
    + rewrite Q2R_Qred, Q2R_plus, Q2R_mult, Q2R_qlip. pose proof (lip_nonneg L nin). pose proof (ln_T_nonneg T HT).
      assert (lip L nin * er <= lip L nin * Q2R e) by (apply Rmult_le_compat_l; lra).
      split; [apply Rplus_le_le_0_compat; [apply Rmult_le_pos | apply div_nonneg] | ]; lra.
Qed.

Lemma qerr_sound : forall T lam step, (1 <= T)%nat -> 0 < lam -> ln (INR T) / lam <= Q2R step ->
  forall ls nin e er, 0 <= er <= Q2R e -> err_layers T lam nin ls er <= Q2R (qerr nin ls step e).
Proof.
  intros T lam step HT Hl Hstep. induction ls as [|L ls IH]; intros nin e er He; cbn [err_layers qerr]; [lra | ].
  apply IH. rewrite Q2R_Qred, Q2R_plus, Q2R_mult, Q2R_qlip. pose proof (lip_nonneg L nin). pose proof (ln_T_nonneg T HT).
  assert (lip L nin * er <= lip L nin * Q2R e) by (apply Rmult_le_compat_l; lra).
  split; [apply Rplus_le_le_0_compat; [apply Rmult_le_pos | apply div_nonneg] | ]; lra.
Qed.

(** C5 with its hypothesis and bound decided by computation: for a given net, shift constants,
    box, λ and ε, [vm_compute] evaluates two booleans, and then |Tf_λ − M| ≤ ε on the whole box. *)
Theorem C5_checked : forall (M : maxout) (Rs : shifts) (B : box) (U lam eps : Q) (m b : nat),
  well_formedb M = true -> softmax_ok M Rs B U lam eps m b = true ->
  forall x, in_box (input_dim M) B x -> forall o, (o < outputs M)%nat ->
  Rabs (tf_eval (softmax_l (Q2R lam)) (construct M Rs) x o - maxout_eval M x o) <= Q2R eps.
Proof.
  intros M Rs B U lam eps m b Hwf Hok x Hx o Ho.
  apply well_formedb_sound in Hwf. destruct (wf_facts M Hwf) as [HT _].
  unfold softmax_ok in Hok. cbv zeta in Hok.
  repeat match type of Hok with _ && _ = true => apply andb_prop in Hok; destruct Hok as [Hok ?H] end.
  rename H into Hout, H0 into Hmar, H1 into HexpU, H2 into HU, H3 into Hlam.
  apply negb_true_iff in Hlam. assert (Hlam' : ~ (lam <= 0)%Q) by (intro E; apply Qle_bool_iff in E; congruence).
  apply Qnot_le_lt, Qlt_Rlt in Hlam'. rewrite Q2R0 in Hlam'. clear Hlam. rename Hlam' into Hlam.
  apply Qle_bool_iff in HU. apply Qle_bool_iff in HexpU.
  pose proof (ln_le_of_exp_lower _ U m b HT HU HexpU) as HlnU.
  set (step := Qred (U / lam)) in *.
  assert (Hstep : ln (INR (max_rank M)) / Q2R lam <= Q2R step).
  { unfold step. rewrite Q2R_Qred, Q2R_div.
    - unfold Rdiv. apply Rmult_le_compat_r; [left; apply Rinv_0_lt_compat | ]; lra.
    - intro E. apply Qeq_eqR in E. rewrite Q2R0 in E. lra. }
  eapply Rle_trans; [apply C5_network; auto | ].
  - eapply margins_sound; eauto. rewrite Q2R0. lra.
  - unfold softmax_err. pose proof (forallb_seq _ _ Hout o Ho) as Ho'. cbv beta in Ho'.
    apply Qle_bool_iff, Qle_Rle in Ho'. rewrite Q2R_mult, Q2R_qsum in Ho'.
    eapply Rle_trans; [ | exact Ho'].
    rewrite (rsum_ext (last_width M) (fun c => Q2R (qabs (rd_w M o c))) (fun c => Rabs (Q2R (rd_w M o c))))
      by (intros; apply Q2R_qabs).
    apply Rmult_le_compat_l; [apply rsum_nonneg; intros; apply Rabs_pos | ].
    apply qerr_sound; auto. rewrite Q2R0. lra.
Qed.
